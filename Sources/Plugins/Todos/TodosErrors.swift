import Bus

/// The typed errors of `io.appd.Todos`.
public struct TodosError: WireError, Equatable {
    public let name: String
    public var field: String?
    public var reason: String?

    public static let notFound = TodosError(name: "NotFound")
    public static func validation(_ field: String, _ reason: String) -> TodosError {
        TodosError(name: "ValidationFailed", field: field, reason: reason)
    }

    public var wireName: String { "io.appd.Todos.\(name)" }
    public var wireParameters: [String: JSONValue] {
        name == "ValidationFailed" ? ["field": .string(field ?? ""), "reason": .string(reason ?? "")] : [:]
    }
    public var description: String {
        name == "NotFound" ? "no such todo" : "\(field ?? "input"): \(reason ?? "invalid")"
    }
}
