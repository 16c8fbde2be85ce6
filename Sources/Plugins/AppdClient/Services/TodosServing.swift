// SPDX-License-Identifier: Apache-2.0
import Contracts
import Foundation

/// What a todos repository needs from a server: `AppdClient.todos` over HTTP, or
/// `InMemoryTodos` (the `AppdClientTesting` product) in a view model's tests.
///
/// Writes take an idempotency key (a retry with the same key has its effect once) and the
/// version the change is based on (`expectedVersion`: a change made meanwhile elsewhere is
/// `TodosError.conflict` carrying the todo as it stands).
public protocol TodosServing: Sendable {
    func add(title: String, notes: String?, due: Date?, id: String?, idempotencyKey: String?) async throws -> Todo
    func get(id: String) async throws -> Todo
    func list(_ filter: TodoFilter, cursor: String?, limit: Int?) async throws -> TodosInterface.TodoPage
    func update(id: String, _ edit: TodoEdit, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo
    func complete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo
    func reopen(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo
    func delete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws
    func clearCompleted() async throws -> Int
    /// What changed after `cursor` (nil: everything), oldest first, tombstones included.
    func changes(after cursor: Int64?, limit: Int?) async throws -> TodosInterface.ChangePage
    /// The log position of each change to the user's todos after `cursor`, then live, resumed
    /// after a dropped connection: a signal to pull `changes(after:)`, which carries the data.
    func changeSignals(after cursor: Int64) -> AsyncThrowingStream<Int64, any Error>
}

/// Which todos `list` returns.
public enum TodoFilter: String, Sendable, Hashable, CaseIterable, Codable {
    case all, open, done
}

/// The fields an update changes; nil leaves a field as it is, `.some(nil)` clears notes or the
/// due time.
public struct TodoEdit: Sendable, Hashable {
    public var title: String?
    public var notes: String??
    public var due: Date??

    public init(title: String? = nil, notes: String?? = nil, due: Date?? = nil) {
        self.title = title
        self.notes = notes
        self.due = due
    }

    /// The edit as appd's `Update` takes it (an empty string clears).
    public var command: (title: String?, notes: String?, dueAt: String?) {
        (title, notes.map { $0 ?? "" }, due.map { $0?.rfc3339 ?? "" })
    }

    /// `todo` with the edit made (what the app shows before appd has it).
    public func applied(to todo: Todo) -> Todo {
        var todo = todo
        if let title { todo.title = title }
        if let notes { todo.notes = notes.flatMap { $0.isEmpty ? nil : $0 } }
        if let due { todo.dueAt = due?.rfc3339 }
        return todo
    }
}

extension TodosServing {
    public func add(title: String, notes: String? = nil, due: Date? = nil) async throws -> Todo {
        try await add(title: title, notes: notes, due: due, id: nil, idempotencyKey: nil)
    }
    public func list(_ filter: TodoFilter = .all) async throws -> TodosInterface.TodoPage {
        try await list(filter, cursor: nil, limit: nil)
    }
    public func update(id: String, _ edit: TodoEdit, expectedVersion: Int64? = nil) async throws -> Todo {
        try await update(id: id, edit, expectedVersion: expectedVersion, idempotencyKey: nil)
    }
    public func complete(id: String, expectedVersion: Int64? = nil) async throws -> Todo {
        try await complete(id: id, expectedVersion: expectedVersion, idempotencyKey: nil)
    }
    public func reopen(id: String, expectedVersion: Int64? = nil) async throws -> Todo {
        try await reopen(id: id, expectedVersion: expectedVersion, idempotencyKey: nil)
    }
    public func delete(id: String, expectedVersion: Int64? = nil) async throws {
        try await delete(id: id, expectedVersion: expectedVersion, idempotencyKey: nil)
    }
}
