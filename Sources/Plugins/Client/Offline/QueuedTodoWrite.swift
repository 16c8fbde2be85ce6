import Contracts
import Foundation

/// One change the app made to a todo, kept until appd has it: sent in the order made, each
/// with the idempotency key made with it (a resend after a lost reply, a crash or a restart
/// has its effect once) and the version it was based on.
public struct QueuedTodoWrite: Codable, Sendable, Hashable, Identifiable {
    public enum Change: Codable, Sendable, Hashable {
        case add(title: String, notes: String?, dueAt: String?)
        /// The fields as `Update` takes them: nil leaves one as it is, "" clears notes or dueAt.
        case update(title: String?, notes: String?, dueAt: String?)
        case complete
        case reopen
        case delete
    }

    /// The idempotency key, made with the change.
    public let key: String
    public let todoId: String
    public let change: Change
    /// The version of the todo on appd the change was based on; nil for an add, and for a
    /// change to a todo appd did not have yet (its add was queued before it).
    public internal(set) var expectedVersion: Int64?
    /// When the app made the change (RFC 3339).
    public let madeAt: String

    public var id: String { key }

    init(todoId: String, change: Change, expectedVersion: Int64?, madeAt: String) {
        self.key = UUID().uuidString.lowercased()
        self.todoId = todoId
        self.change = change
        self.expectedVersion = expectedVersion
        self.madeAt = madeAt
    }

    /// `todo` (nil: none yet) as the app sees it once the change is made; nil when deleted.
    func applied(to todo: Todo?) -> Todo? {
        switch change {
        case .add(let title, let notes, let dueAt):
            return todo ?? Todo(id: todoId, title: title, notes: notes, done: false, dueAt: dueAt, createdAt: madeAt, updatedAt: madeAt, version: 0)
        case .update(let title, let notes, let dueAt):
            guard var todo else { return nil }
            if let title { todo.title = title }
            if let notes { todo.notes = notes.isEmpty ? nil : notes }
            if let dueAt { todo.dueAt = dueAt.isEmpty ? nil : dueAt }
            todo.updatedAt = madeAt
            return todo
        case .complete:
            guard var todo else { return nil }
            if !todo.done {
                todo.done = true
                todo.completedAt = madeAt
                todo.updatedAt = madeAt
            }
            return todo
        case .reopen:
            guard var todo else { return nil }
            if todo.done {
                todo.done = false
                todo.completedAt = nil
                todo.updatedAt = madeAt
            }
            return todo
        case .delete:
            return nil
        }
    }
}

/// Changes the app made that appd has not taken because the todo changed there meanwhile
/// (or an add's id holds another todo): both versions, for the app (or its user) to decide.
/// Nothing of the app's is sent or dropped until `OfflineTodos.resolve` says which wins.
public struct TodoConflict: Codable, Sendable, Hashable, Identifiable {
    public let todoId: String
    /// The todo as it stands on appd.
    public let server: Todo
    /// The todo as the app had made it (nil: the app deleted it).
    public let mine: Todo?
    /// The app's changes held back, in the order made.
    public let writes: [QueuedTodoWrite]

    public var id: String { todoId }
}

/// How a conflict ends.
public enum TodoResolution: Sendable, Hashable {
    /// appd's todo stays; the app's changes are dropped.
    case keepServer
    /// The app's version is sent over appd's (a delete deletes it).
    case keepMine
    /// This todo (the app merged the two) is sent over appd's.
    case merged(Todo)
}

/// A change appd refused for good (invalid, over a quota, not allowed): dropped from the queue
/// with the reason, for the app to show. Later changes to the same todo are dropped with it.
public struct RejectedTodoWrite: Codable, Sendable, Hashable, Identifiable {
    public let write: QueuedTodoWrite
    /// What appd said, in words for the app's user.
    public let reason: String
    /// The error's wire name (`io.appd.Todos.ValidationFailed`), when appd named one.
    public let error: String?

    public var id: String { write.key }
}
