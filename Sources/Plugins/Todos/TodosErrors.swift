import Bus

/// The typed errors of `io.appd.Todos`.
public struct TodosError: WireError, Equatable {
    public let name: String
    public var field: String?
    public var reason: String?

    public static let notFound = TodosError(name: "NotFound")
    public var limit: Int?
    public static func quotaExceeded(_ limit: Int) -> TodosError { TodosError(name: "QuotaExceeded", limit: limit) }
    public static func validation(_ field: String, _ reason: String) -> TodosError {
        TodosError(name: "ValidationFailed", field: field, reason: reason)
    }
    /// The todo as it stands, for a Conflict.
    public var todo: Todo?
    public static func conflict(_ current: Todo) -> TodosError { TodosError(name: "Conflict", todo: current) }
    public static func resyncRequired(_ reason: String) -> TodosError { TodosError(name: "ResyncRequired", reason: reason) }

    public var wireName: String { "io.appd.Todos.\(name)" }
    public var wireParameters: [String: JSONValue] {
        switch name {
        case "ValidationFailed": ["field": .string(field ?? ""), "reason": .string(reason ?? "")]
        case "QuotaExceeded": ["limit": .int(Int64(limit ?? 0))]
        case "Conflict": ["todo": (try? JSONValue(encoding: todo)) ?? .null]
        case "ResyncRequired": ["reason": .string(reason ?? "")]
        default: [:]
        }
    }
    public var description: String {
        switch name {
        case "NotFound": "no such todo"
        case "QuotaExceeded": "this account holds \(limit ?? 0) todos, as many as it may; delete some first"
        case "Conflict": "the todo changed since (it is at version \(todo?.version ?? 0) now); look at it and decide again"
        case "ResyncRequired": reason ?? "pull again without a cursor"
        default: "\(field ?? "input"): \(reason ?? "invalid")"
        }
    }
}
