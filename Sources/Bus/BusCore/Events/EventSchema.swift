// SPDX-License-Identifier: Apache-2.0
/// An event type's payload shape in varlink IDL type syntax (`(todoId: string, userId: string)`),
/// as `io.appd.Bus.Topics` shows it and as published payloads are checked against.
public struct EventSchema: Sendable, CustomStringConvertible {
    /// The payload type: a struct.
    public let type: VarlinkType
    /// A one-type interface the validator checks against.
    private let interface: VarlinkInterface

    /// Parses an IDL struct type, e.g. from an external plugin's manifest.
    public init(parsing text: String) throws(VarlinkIDLError) {
        let interface = try VarlinkInterface(parsing: "interface io.appd.event\n\ntype Payload \(text)\n")
        guard let payload = interface.type("Payload"), case .structure = payload.type else {
            throw VarlinkIDLError(line: 1, reason: "an event payload must be a struct type like (noteId: string, userId: string)")
        }
        self.type = payload.type
        self.interface = interface
    }

    /// The schema of a Swift event type, read from its `Decodable` shape.
    public init<E: Event>(of type: E.Type) throws {
        let derived = try PayloadReflector.type(of: E.self)
        do {
            try self.init(parsing: derived.description)
        } catch {
            throw VarlinkIDLError(line: 0, reason: "\(E.self) (\(E.topic)): \(error.reason)")
        }
    }

    public var description: String { type.description }

    /// Nil when `payload` fits; otherwise the field and what is wrong with it.
    public func problem(with payload: JSONValue) -> String? {
        guard let problem = interface.check(payload, against: .named("Payload"), path: "") else { return nil }
        return problem.path.isEmpty ? problem.reason : "\(problem.path): \(problem.reason)"
    }
}
