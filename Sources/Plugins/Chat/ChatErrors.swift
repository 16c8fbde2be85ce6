import Bus

/// The typed errors of `io.appd.Chat`.
public struct ChatError: WireError, Equatable {
    public let name: String
    public var field: String?
    public var reason: String?

    public static let notFound = ChatError(name: "NotFound")
    public var limit: Int?
    public static func quotaExceeded(_ limit: Int) -> ChatError { ChatError(name: "QuotaExceeded", limit: limit) }
    public static func validation(_ field: String, _ reason: String) -> ChatError { ChatError(name: "ValidationFailed", field: field, reason: reason) }
    /// The conversation as it stands, for a Conflict.
    public var conversation: Conversation?
    public static func conflict(_ current: Conversation) -> ChatError { ChatError(name: "Conflict", conversation: current) }
    public static func resyncRequired(_ reason: String) -> ChatError { ChatError(name: "ResyncRequired", reason: reason) }

    public var wireName: String { "io.appd.Chat.\(name)" }
    public var wireParameters: [String: JSONValue] {
        switch name {
        case "ValidationFailed": ["field": .string(field ?? ""), "reason": .string(reason ?? "")]
        case "QuotaExceeded": ["limit": .int(Int64(limit ?? 0))]
        case "Conflict": ["conversation": (try? JSONValue(encoding: conversation)) ?? .null]
        case "ResyncRequired": ["reason": .string(reason ?? "")]
        default: [:]
        }
    }
    public var description: String {
        switch name {
        case "NotFound": "no such conversation or message (or it is not yours)"
        case "QuotaExceeded": "this account holds \(limit ?? 0) conversations, as many as it may; delete some first"
        case "Conflict": "the conversation changed since (it is at version \(conversation?.version ?? 0) now); look at it and decide again"
        case "ResyncRequired": reason ?? "pull again without a cursor"
        default: "\(field ?? "input"): \(reason ?? "invalid")"
        }
    }
}
