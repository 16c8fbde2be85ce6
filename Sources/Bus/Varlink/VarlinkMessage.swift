// SPDX-License-Identifier: Apache-2.0
import BusCore
/// A malformed message that ends the connection (varlink has no reply for a message that is
/// not a call).
public struct VarlinkProtocolError: Error, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "protocol error: \(reason)" }
}

/// One call as read from the wire.
public struct VarlinkCall: Sendable, Equatable {
    public var method: String
    public var parameters: JSONValue
    public var more: Bool
    public var oneway: Bool
    /// appd's one addition to the call object, next to `method`: the client's idempotency key
    /// for a write (`{"method": "io.appd.Todos.Add", "parameters": {…}, "idempotencyKey": "…"}`).
    /// Other varlink services ignore unknown keys; appd checks it (`IdempotencyKey`).
    public var idempotencyKey: String?

    public init(method: String, parameters: JSONValue = [:], more: Bool = false, oneway: Bool = false, idempotencyKey: String? = nil) {
        self.method = method
        self.parameters = parameters
        self.more = more
        self.oneway = oneway
        self.idempotencyKey = idempotencyKey
    }

    /// Reads a call from one NUL-free frame. Unknown keys are ignored; `more`/`oneway` may be
    /// false or null; parameters may be missing or null.
    public init(frame: some Collection<UInt8>, maxDepth: Int = JSONParser.defaultMaxDepth) throws(VarlinkProtocolError) {
        // The envelope's members are taken as they are read (a call has two or three): no
        // dictionary is built for them.
        var (method, more, oneway, key, parameters) = (JSONValue.null, JSONValue.null, JSONValue.null, JSONValue.null, JSONValue.null)
        let isObject: Bool
        do {
            // The bytes where they are (a frame the server read, an array), copied only otherwise.
            let bytes = frame as? ArraySlice<UInt8> ?? (frame as? [UInt8])?[...] ?? ArraySlice(frame)
            isObject = try JSONParser.parseMembers(bytes, maxDepth: maxDepth) { name, member in
                switch name {
                case "method": method = member
                case "parameters": parameters = member
                case "more": more = member
                case "oneway": oneway = member
                case "idempotencyKey": key = member
                default: break
                }
            }
        } catch {
            throw VarlinkProtocolError("\(error)")
        }
        guard isObject else { throw VarlinkProtocolError("a message must be a JSON object") }
        guard case .string(let method) = method else {
            throw VarlinkProtocolError("a call needs a string 'method'")
        }
        func flag(_ value: JSONValue, _ key: String) throws(VarlinkProtocolError) -> Bool {
            switch value {
            case .null: return false
            case .bool(let b): return b
            default: throw VarlinkProtocolError("'\(key)' must be a boolean")
            }
        }
        self.method = method
        self.more = try flag(more, "more")
        self.oneway = try flag(oneway, "oneway")
        if self.more && self.oneway { throw VarlinkProtocolError("a call cannot be both 'oneway' and 'more'") }
        switch key {
        case .null: self.idempotencyKey = nil
        case .string(let key): self.idempotencyKey = key
        default: throw VarlinkProtocolError("'idempotencyKey' must be a string")
        }
        switch parameters {
        case .null: self.parameters = .object([:])
        case .object(let p): self.parameters = .object(p)
        default: throw VarlinkProtocolError("'parameters' must be an object")
        }
    }

    /// The call as a NUL-terminated frame.
    public func frame() -> [UInt8] {
        var members: [String: JSONValue] = ["method": .string(method)]
        if parameters != .object([:]) && parameters != .null { members["parameters"] = parameters }
        if more { members["more"] = true }
        if oneway { members["oneway"] = true }
        if let idempotencyKey { members["idempotencyKey"] = .string(idempotencyKey) }
        var out = JSONWriter.bytes(.object(members))
        out.append(0)
        return out
    }
}

/// One reply: parameters, or an error name with its parameters; `continues` in streams.
public struct VarlinkReply: Sendable, Equatable {
    public var parameters: JSONValue
    public var continues: Bool
    public var error: String?
    /// The parameters already encoded as a JSON object (a typed reply, encoded once); when
    /// set, `parameters` is not filled in. Only a transport that asked for encoded replies
    /// (`VarlinkDispatcher.handle(encodedReplies:)`) gets one.
    public var encodedParameters: [UInt8]?

    public init(parameters: JSONValue = [:], continues: Bool = false, error: String? = nil) {
        self.parameters = parameters
        self.continues = continues
        self.error = error
    }

    /// A reply whose parameters are encoded already.
    public init(encodedParameters: [UInt8]) {
        self.init(parameters: .null)
        self.encodedParameters = encodedParameters
    }

    /// The parameters as a value (parsed from the encoded bytes when that is what it has).
    public func parametersValue() throws -> JSONValue {
        guard let encodedParameters else { return parameters }
        return try JSONParser.parse(encodedParameters)
    }

    /// An error reply rendered from a typed error.
    public init(error: some WireError) {
        let (name, parameters) = error.wire
        self.init(parameters: .object(parameters), error: name)
    }

    /// Only `parameters`, `continues` (when true) and `error` (when set): the strictest clients
    /// drop the connection on any other key.
    /// Written straight to bytes, keys in sorted order as `JSONWriter` would write them (no
    /// dictionary built per reply).
    /// Writes an intermediate reply (`continues`) whose parameters are `parameters`, a JSON
    /// object already encoded: the same bytes `write` makes for it.
    public static func writeContinuing(parameters: [UInt8], into out: inout [UInt8]) {
        out.append(contentsOf: #"{"continues":true,"parameters":"#.utf8)
        out.append(contentsOf: parameters)
        out.append(contentsOf: [UInt8(ascii: "}"), 0])
    }

    public func write(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if continues { out.append(contentsOf: #""continues":true,"#.utf8) }
        if let error {
            out.append(contentsOf: #""error":"#.utf8)
            JSONWriter.write(.string(error), into: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""parameters":"#.utf8)
        if let encodedParameters {
            out.append(contentsOf: encodedParameters)
        } else if parameters == .null {
            out.append(contentsOf: "{}".utf8)
        } else {
            JSONWriter.write(parameters, into: &out)
        }
        out.append(contentsOf: [UInt8(ascii: "}"), 0])
    }

    public init(frame: some Collection<UInt8>) throws(VarlinkProtocolError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(frame, maxDepth: 512)
        } catch {
            throw VarlinkProtocolError("\(error)")
        }
        guard case .object(let members) = value else { throw VarlinkProtocolError("a reply must be a JSON object") }
        self.parameters = members["parameters"] ?? .object([:])
        self.continues = members["continues"] == .bool(true)
        self.error = members["error"]?.stringValue
    }
}

/// Splits a byte stream into NUL-terminated frames, refusing any frame over `maxBytes`.
public struct VarlinkFrameReader {
    /// The largest message anything in appd reads: a server's configurable limit stays under it.
    public static let hardMaxMessageBytes = 16 << 20
    public let maxBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where to continue looking for the NUL (bytes before it were already scanned).
    private var scanned = 0

    public init(maxBytes: Int) { self.maxBytes = maxBytes }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received that are not yet a whole frame.
    public var pendingCount: Int { buffer.count - start }

    /// The next whole frame (without its NUL), nil when none is complete yet.
    /// Throws when the frame in progress is larger than `maxBytes`.
    public mutating func nextFrame() throws(VarlinkProtocolError) -> ArraySlice<UInt8>? {
        let searchFrom = max(start, scanned)
        if let nul = buffer[searchFrom...].firstIndex(of: 0) {
            guard nul - start <= maxBytes else { throw VarlinkProtocolError("message larger than \(maxBytes) bytes") }
            let frame = buffer[start..<nul]
            start = nul + 1
            scanned = start
            return frame
        }
        scanned = buffer.count
        guard buffer.count - start <= maxBytes else { throw VarlinkProtocolError("message larger than \(maxBytes) bytes") }
        return nil
    }

    /// Drops consumed bytes; call after taking the frames of one read.
    public mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            start = 0
            scanned = 0
        } else if start > 65536 {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
    }
}
