// SPDX-License-Identifier: Apache-2.0
import BusCore

/// An error reply no `ErrorDecoding` knew: its name and parameters as they came.
public struct VarlinkErrorReply: Error, Equatable, CustomStringConvertible {
    public let name: String
    public let parameters: JSONValue

    public init(name: String, parameters: JSONValue) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String { "\(name) \(parameters.jsonText)" }
}

extension VarlinkClient {
    /// Calls `command` and returns its reply type. An error reply is thrown as the typed error
    /// `errors` reads it as (`.contracts`: `TodosError.notFound`, …), else as a
    /// `VarlinkErrorReply`; a transport failure as `VarlinkClientError`; a reply that is not the
    /// command's reply type as `VarlinkClientError.protocolViolation`.
    public func call<C: Command>(_ command: C, errors: ErrorDecoding = .none) throws -> C.Reply {
        try Self.typed(try call(C.method, JSONValue(encoding: command)), as: C.Reply.self, errors: errors)
    }

    /// Calls a streaming method; `onReply` sees each reply as the command's reply type until
    /// the last. Errors as `call` throws them.
    public func stream<C: StreamingCommand>(_ command: C, errors: ErrorDecoding = .none, onReply: (C.Reply) throws -> Void) throws {
        try stream(C.method, JSONValue(encoding: command)) { reply in try onReply(Self.typed(reply, as: C.Reply.self, errors: errors)) }
    }

    static func typed<Reply: Decodable>(_ reply: VarlinkReply, as type: Reply.Type, errors: ErrorDecoding) throws -> Reply {
        if let name = reply.error {
            throw errors.error(named: name, parameters: reply.parameters.objectValue ?? [:]) ?? VarlinkErrorReply(name: name, parameters: reply.parameters)
        }
        do {
            return try reply.parameters.decode(as: Reply.self)
        } catch {
            throw VarlinkClientError.protocolViolation("the reply is not a \(Reply.self): \(error)")
        }
    }
}
