// SPDX-License-Identifier: Apache-2.0
import Contracts
import Foundation

/// The todo list on the device: `OfflineTodos(service: appd.todos, store: FileOfflineTodosStore(path: …))`.
public typealias OfflineTodos = OfflineRepository<TodosKind>
public typealias OfflineTodosStore = OfflineStore<TodosKind>
public typealias FileOfflineTodosStore = FileOfflineStore<TodosKind>
public typealias InMemoryOfflineTodosStore = InMemoryOfflineStore<TodosKind>
public typealias QueuedTodoWrite = QueuedWrite<TodosKind>
public typealias TodoConflict = OfflineConflict<TodosKind>
public typealias TodoResolution = OfflineResolution<Todo>
public typealias RejectedTodoWrite = RejectedWrite<TodosKind>

/// Todos, kept offline over `TodosServing`.
public enum TodosKind: OfflineKind {
    public enum Change: Codable, Sendable, Hashable {
        case add(title: String, notes: String?, dueAt: String?)
        /// The fields as `Update` takes them: nil leaves one as it is, "" clears notes or dueAt.
        case update(title: String?, notes: String?, dueAt: String?)
        case complete
        case reopen
        case delete
    }

    public static func version(of item: Todo) -> Int64 { item.version }
    public static func precedes(_ a: Todo, _ b: Todo) -> Bool { (a.createdAt, a.id) < (b.createdAt, b.id) }
    public static var deletion: Change { .delete }

    public static func applied(_ change: Change, to todo: Todo?, id: String, madeAt: String) -> Todo? {
        switch change {
        case .add(let title, let notes, let dueAt):
            return todo ?? Todo(id: id, title: title, notes: notes, done: false, dueAt: dueAt, createdAt: madeAt, updatedAt: madeAt, version: 0)
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

    public static func send(_ change: Change, id: String, expectedVersion: Int64?, key: String, to service: any TodosServing) async throws -> Todo? {
        switch change {
        case .add(let title, let notes, let dueAt):
            return try await service.add(title: title, notes: notes, due: dueAt.flatMap(Date.init(rfc3339:)), id: id, idempotencyKey: key)
        case .update(let title, let notes, let dueAt):
            let edit = TodoEdit(title: title, notes: notes.map { $0.isEmpty ? nil : $0 }, due: dueAt.map { $0.isEmpty ? nil : Date(rfc3339: $0) })
            return try await service.update(id: id, edit, expectedVersion: expectedVersion, idempotencyKey: key)
        case .complete:
            return try await service.complete(id: id, expectedVersion: expectedVersion, idempotencyKey: key)
        case .reopen:
            return try await service.reopen(id: id, expectedVersion: expectedVersion, idempotencyKey: key)
        case .delete:
            try await service.delete(id: id, expectedVersion: expectedVersion, idempotencyKey: key)
            return nil
        }
    }

    public static func changes(after cursor: Int64?, from service: any TodosServing) async throws -> OfflineFeedPage<Todo> {
        let page = try await service.changes(after: cursor, limit: 200)
        return OfflineFeedPage(
            changes: page.changes.map { OfflineFeedChange(seq: $0.seq, id: $0.id, deleted: $0.deleted, item: $0.todo) }, nextCursor: page.nextCursor, more: page.more)
    }

    public static func signals(after cursor: Int64, from service: any TodosServing) -> AsyncThrowingStream<Int64, any Error> {
        service.changeSignals(after: cursor)
    }

    public static func changes(from server: Todo, to wanted: Todo?) -> [Change] {
        guard let wanted else { return [.delete] }
        var changes: [Change] = []
        if wanted.title != server.title || wanted.notes != server.notes || wanted.dueAt != server.dueAt {
            changes.append(
                .update(
                    title: wanted.title != server.title ? wanted.title : nil,
                    notes: wanted.notes != server.notes ? (wanted.notes ?? "") : nil,
                    dueAt: wanted.dueAt != server.dueAt ? (wanted.dueAt ?? "") : nil))
        }
        if wanted.done != server.done { changes.append(wanted.done ? .complete : .reopen) }
        return changes
    }

    public static func conflictingItem(in error: any Error) -> Todo? {
        if case TodosError.conflict(let todo) = error { return todo }
        return nil
    }

    public static func isNotFound(_ error: any Error) -> Bool { (error as? TodosError) == .notFound }

    public static func isResyncRequired(_ error: any Error) -> Bool {
        if case TodosError.resyncRequired = error { return true }
        return false
    }
}

extension OfflineRepository where Kind == TodosKind {
    /// The todos as the app sees them: appd's with the app's unsent changes made, oldest first.
    public func todos() async throws -> [Todo] { try await items() }

    /// Adds a todo with an id made here (`Todo.newID()`); it is the todo's id on appd too.
    @discardableResult
    public func add(title: String, notes: String? = nil, due: Date? = nil) async throws -> Todo {
        try await create(Todo.newID(), .add(title: title, notes: notes, dueAt: due?.rfc3339))!
    }

    @discardableResult
    public func update(id: String, _ edit: TodoEdit) async throws -> Todo {
        let fields = edit.command
        return try await change(id, .update(title: fields.title, notes: fields.notes, dueAt: fields.dueAt))!
    }

    @discardableResult
    public func complete(id: String) async throws -> Todo { try await change(id, .complete)! }

    @discardableResult
    public func reopen(id: String) async throws -> Todo { try await change(id, .reopen)! }
}

extension OfflineSnapshot where Kind == TodosKind {
    /// appd's todos with the app's unsent changes made, oldest first.
    public var todos: [Todo] { items }
}

extension OfflineConflict where Kind == TodosKind {
    public var todoId: String { itemId }
}

extension QueuedWrite where Kind == TodosKind {
    public var todoId: String { itemId }
}
