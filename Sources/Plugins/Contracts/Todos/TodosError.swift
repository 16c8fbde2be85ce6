// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The typed errors of `io.appd.Todos`.
public enum TodosError: InterfaceError {
    public static let interface = "io.appd.Todos"

    case validationFailed(field: String, reason: String)
    case notFound
    /// The account holds as many todos as it may.
    case quotaExceeded(limit: Int)
    /// The todo is not at the version expected: the todo as it stands.
    case conflict(todo: Todo)
    /// The cursor is older than the deletions kept.
    case resyncRequired(reason: String)

    public static func validation(_ field: String, _ reason: String) -> TodosError { .validationFailed(field: field, reason: reason) }

    public var description: String {
        switch self {
        case .validationFailed(let field, let reason): "\(field): \(reason)"
        case .notFound: "no such todo"
        case .quotaExceeded(limit: let limit): "this account holds \(limit) todos, as many as it may; delete some first"
        case .conflict(let todo): "the todo changed since (it is at version \(todo.version) now); look at it and decide again"
        case .resyncRequired(reason: let reason): reason
        }
    }
}
