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

    public var wireName: String { "io.appd.Chat.\(name)" }
    public var wireParameters: [String: JSONValue] {
        switch name {
        case "ValidationFailed": ["field": .string(field ?? ""), "reason": .string(reason ?? "")]
        case "QuotaExceeded": ["limit": .int(Int64(limit ?? 0))]
        default: [:]
        }
    }
    public var description: String {
        switch name {
        case "NotFound": "no such conversation or message (or it is not yours)"
        case "QuotaExceeded": "this account holds \(limit ?? 0) conversations, as many as it may; delete some first"
        default: "\(field ?? "input"): \(reason ?? "invalid")"
        }
    }
}
