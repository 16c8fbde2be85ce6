import Bus

/// The typed errors of `io.appd.Chat`.
public struct ChatError: WireError, Equatable {
    public let name: String
    public var field: String?
    public var reason: String?

    public static let notFound = ChatError(name: "NotFound")
    public static func validation(_ field: String, _ reason: String) -> ChatError { ChatError(name: "ValidationFailed", field: field, reason: reason) }

    public var wireName: String { "io.appd.Chat.\(name)" }
    public var wireParameters: [String: JSONValue] {
        name == "ValidationFailed" ? ["field": .string(field ?? ""), "reason": .string(reason ?? "")] : [:]
    }
    public var description: String {
        name == "NotFound" ? "no such conversation or message (or it is not yours)" : "\(field ?? "input"): \(reason ?? "invalid")"
    }
}
