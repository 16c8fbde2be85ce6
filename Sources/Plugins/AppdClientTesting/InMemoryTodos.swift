// SPDX-License-Identifier: Apache-2.0
import AppdClient
import BusCore
import Contracts
import Foundation

/// A todos server in memory, with appd's rules: ids `t_` and a UUID, versions that go up by
/// one, `expectedVersion` conflicts carrying the todo as it stands, idempotency keys that
/// return the first outcome, a change feed with tombstones, and live change signals. For a view
/// model's or a repository's tests; `reachable = false` makes every call fail as a dropped
/// network would.
public actor InMemoryTodos: TodosServing {
    private var todos: [String: Todo] = [:]
    private var feed = FakeChangeFeed()
    private var outcomes = FakeOutcomes<Todo?>()
    /// False: every call throws `AppdClientError.transport` (the device is offline).
    public var reachable = true
    /// Calls that reached the server, by method name (`add`, `update`, …).
    public private(set) var calls: [String] = []

    public init(_ todos: [Todo] = []) {
        for todo in todos {
            self.todos[todo.id] = todo
            feed.record(todo.id, deleted: false)
        }
    }

    public func setReachable(_ reachable: Bool) { self.reachable = reachable }

    public func add(title: String, notes: String?, due: Date?, id: String?, idempotencyKey: String?) async throws -> Todo {
        try await once("add", idempotencyKey) {
            try Self.check(title: title)
            let id = try id.map { try Self.canonical($0) } ?? Todo.newID()
            let now = WallTime.now().rfc3339
            let todo = Todo(id: id, title: title, notes: notes, done: false, dueAt: due?.rfc3339, createdAt: now, updatedAt: now, version: 1)
            if let existing = todos[id] {
                guard existing.title == title, existing.notes == notes, existing.dueAt == todo.dueAt else { throw TodosError.conflict(todo: existing) }
                return existing
            }
            todos[id] = todo
            record(id, deleted: false)
            return todo
        }!
    }

    public func get(id: String) async throws -> Todo {
        try enter("get")
        guard let todo = todos[id] else { throw TodosError.notFound }
        return todo
    }

    public func list(_ filter: TodoFilter, cursor: String?, limit: Int?) async throws -> TodosInterface.TodoPage {
        try enter("list")
        let all = todos.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.filter {
            switch filter {
            case .all: true
            case .open: !$0.done
            case .done: $0.done
            }
        }
        let after = all.drop { cursor != nil && $0.id <= cursor! }
        let page = Array(after.prefix(limit ?? 100))
        return TodosInterface.TodoPage(todos: page, nextCursor: page.count < after.count ? page.last?.id : nil)
    }

    public func update(id: String, _ edit: TodoEdit, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await change("update", id, expectedVersion, idempotencyKey) { todo in
            if let title = edit.title { try Self.check(title: title) }
            return edit.applied(to: todo)
        }
    }

    public func complete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await change("complete", id, expectedVersion, idempotencyKey) { todo in
            var todo = todo
            todo.done = true
            todo.completedAt = WallTime.now().rfc3339
            return todo
        }
    }

    public func reopen(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await change("reopen", id, expectedVersion, idempotencyKey) { todo in
            var todo = todo
            todo.done = false
            todo.completedAt = nil
            return todo
        }
    }

    public func delete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws {
        _ = try await once("delete", idempotencyKey) {
            guard let todo = todos[id] else { throw TodosError.notFound }
            if let expectedVersion, expectedVersion != todo.version { throw TodosError.conflict(todo: todo) }
            todos[id] = nil
            record(id, deleted: true)
            return nil
        }
    }

    public func clearCompleted() async throws -> Int {
        try enter("clearCompleted")
        let done = todos.values.filter(\.done).map(\.id)
        for id in done {
            todos[id] = nil
            record(id, deleted: true)
        }
        return done.count
    }

    public func changes(after cursor: Int64?, limit: Int?) async throws -> TodosInterface.ChangePage {
        try enter("changes")
        let page = feed.page(after: cursor, limit: limit)
        let changes = page.changes.map { TodoChange(seq: $0.seq, id: $0.id, deleted: $0.deleted, todo: $0.deleted ? nil : todos[$0.id]) }
        return TodosInterface.ChangePage(changes: changes, nextCursor: page.nextCursor, more: page.more)
    }

    public nonisolated func changeSignals(after cursor: Int64) -> AsyncThrowingStream<Int64, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Int64.self, throwing: (any Error).self)
        // Unstructured: the stream is returned synchronously; the listener is registered on the actor in this hop.
        Task { await self.listen(continuation, after: cursor) }
        return stream
    }

    // MARK: -

    private func listen(_ continuation: AsyncThrowingStream<Int64, any Error>.Continuation, after cursor: Int64) {
        guard reachable else { return continuation.finish(throwing: AppdClientError.transport("offline")) }
        let id = feed.listen(continuation, after: cursor)
        // Unstructured: `onTermination` is synchronous: this hops onto the actor to forget the listener.
        continuation.onTermination = { _ in Task { await self.forget(id) } }
    }

    private func forget(_ id: Int) { feed.forget(id) }

    private func record(_ id: String, deleted: Bool) { feed.record(id, deleted: deleted) }

    private func enter(_ call: String) throws {
        guard reachable else { throw AppdClientError.transport("offline (InMemoryTodos.reachable is false)") }
        calls.append(call)
    }

    private func once(_ call: String, _ key: String?, _ body: () throws -> Todo?) async throws -> Todo? {
        try enter(call)
        return try outcomes.once(key, body)
    }

    private func change(_ call: String, _ id: String, _ expected: Int64?, _ key: String?, _ edit: (Todo) throws -> Todo) async throws -> Todo {
        try await once(call, key) { () throws -> Todo? in
            guard let todo = todos[id] else { throw TodosError.notFound }
            if let expected, expected != todo.version { throw TodosError.conflict(todo: todo) }
            var changed = try edit(todo)
            changed.version = todo.version + 1
            changed.updatedAt = WallTime.now().rfc3339
            todos[id] = changed
            record(id, deleted: false)
            return changed
        }!
    }

    private static func check(title: String) throws {
        guard !title.isEmpty, title.unicodeScalars.count <= 200, title.utf8.count <= 800 else {
            throw TodosError.validationFailed(field: "title", reason: "must be 1 to 200 characters")
        }
    }

    private static func canonical(_ id: String) throws -> String {
        let uuid = id.lowercased().hasPrefix("t_") ? String(id.dropFirst(2)) : id
        guard UUID(uuidString: uuid) != nil else { throw TodosError.validationFailed(field: "id", reason: "must be a UUID") }
        return "t_" + uuid.lowercased()
    }
}
