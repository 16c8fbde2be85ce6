import BusCore
import Contracts
import Foundation

/// An offline-first todos repository: the app reads and edits a copy on the device at once,
/// and `sync()` (or `run()`, which keeps at it) brings appd and the copy together.
///
/// - Every change is queued with the idempotency key made with it and the version it was
///   based on, persisted before the call returns, and sent in order: a resend after a lost
///   reply, a crash of appd or of the app has its effect once.
/// - The copy follows appd's change feed from a persisted cursor (tombstones delete; a cursor
///   older than the tombstones kept starts again from an empty one), then the live event
///   stream from where the feed ended: no gap, nothing applied twice.
/// - A change appd refuses because the todo changed there meanwhile is never dropped or
///   forced: it waits in `conflicts` with both versions until `resolve` says which wins.
///   One appd refuses for good (invalid, over a quota) goes to `rejected` with the reason.
///
/// The todo's id is the app's from the start (`Todo.newID()`), so a view keyed by it never
/// sees a todo change identity when appd confirms it.
public actor OfflineTodos {
    public let service: any TodosServing
    public let store: any OfflineTodosStore
    /// Refusals kept in `rejected` (the oldest go first).
    public static let rejectedKept = 100

    private var state = OfflineTodosState()
    private var loaded = false
    private var running: Task<SyncReport, any Error>?
    private var again = false
    private var listeners: [Int: AsyncStream<OfflineTodosSnapshot>.Continuation] = [:]
    private var nextListener = 0
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    public init(service: any TodosServing, store: any OfflineTodosStore) {
        self.service = service
        self.store = store
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: - What the app reads

    /// The todos as the app sees them: appd's with the app's unsent changes made, oldest first.
    public func todos() async throws -> [Todo] {
        try await load()
        return view()
    }

    /// Everything at once, now and after every change (the current one first): what a view
    /// model observes.
    public func snapshots() async throws -> AsyncStream<OfflineTodosSnapshot> {
        try await load()
        let (stream, continuation) = AsyncStream.makeStream(of: OfflineTodosSnapshot.self, bufferingPolicy: .bufferingNewest(16))
        let id = nextListener
        nextListener += 1
        listeners[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.forget(id) } }
        continuation.yield(snapshot(pulled: []))
        return stream
    }

    public func snapshot() async throws -> OfflineTodosSnapshot {
        try await load()
        return snapshot(pulled: [])
    }

    // MARK: - What the app changes (on the device at once; on appd at the next sync)

    /// Adds a todo with an id made here; it is the todo's id on appd too.
    @discardableResult
    public func add(title: String, notes: String? = nil, due: Date? = nil) async throws -> Todo {
        try await load()
        let write = QueuedTodoWrite(todoId: Todo.newID(), change: .add(title: title, notes: notes, dueAt: due?.rfc3339), expectedVersion: nil, madeAt: Self.now())
        return try await queue(write)!
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

    public func delete(id: String) async throws { _ = try await change(id, .delete) }

    /// Ends a conflict: appd's todo stays (`keepServer`), or the app's version (`keepMine`) or a
    /// merge (`merged`) is queued over appd's current one.
    public func resolve(_ todoId: String, _ resolution: TodoResolution) async throws {
        try await load()
        guard let index = state.conflicts.firstIndex(where: { $0.todoId == todoId }) else { throw OfflineTodosError.noConflict(todoId) }
        let conflict = state.conflicts.remove(at: index)
        let wanted: Todo?
        switch resolution {
        case .keepServer: wanted = conflict.server
        case .keepMine: wanted = conflict.mine
        case .merged(let todo): wanted = todo
        }
        state.queue += Self.writes(from: conflict.server, to: wanted, now: Self.now())
        try await save(pulled: [])
        wake.yield()
    }

    /// Forgets the refusals the app has shown.
    public func clearRejected() async throws {
        try await load()
        state.rejected = []
        try await save(pulled: [])
    }

    // MARK: - Sync

    /// Sends the queue in order, then pulls the change feed until caught up. A call while one
    /// runs waits for it (and one more round, for changes made meanwhile). Throws when appd
    /// cannot be reached or asks for later (the queue stays, in order); conflicts and
    /// refusals are not errors (they are in the report and the state).
    @discardableResult
    public func sync() async throws -> SyncReport {
        try await load()
        if let running {
            again = true
            return try await running.value
        }
        let task = Task { try await self.rounds() }
        running = task
        return try await task.value
    }

    /// Syncs, then follows appd's live events from where the feed ended (each pulls what
    /// changed) and sends each change the app makes, until the calling task is cancelled.
    /// When appd cannot be reached it tries again with backoff (up to `maxBackoff`).
    public func run(maxBackoff: Duration = .seconds(30)) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await sync()
                failures = 0
                try await follow()
            } catch {
                if Task.isCancelled { return }
                failures += 1
                let wait = min(.milliseconds(250) * (1 << min(failures, 10)), maxBackoff)
                try? await Task.sleep(for: wait / 2 + wait / 2 * Double.random(in: 0...1))
            }
        }
    }

    private func rounds() async throws -> SyncReport {
        var report = SyncReport()
        defer { running = nil }
        repeat {
            again = false
            try await push(&report)
            try await pull(&report)
        } while again
        return report
    }

    private func follow() async throws {
        let signals = service.changeSignals(after: state.cursor ?? 0)
        let wakeups = self.wakeups
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await seq in signals where await !self.hasPulled(seq) {
                    try await self.sync()
                }
                throw OfflineTodosError.streamEnded
            }
            group.addTask {
                for await _ in wakeups { try await self.sync() }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func hasPulled(_ seq: Int64) -> Bool { seq <= (state.cursor ?? -1) }

    // MARK: - Pushing the queue

    private func push(_ report: inout SyncReport) async throws {
        while let write = state.queue.first {
            try Task.checkCancellation()
            if let held = state.conflicts.firstIndex(where: { $0.todoId == write.todoId }) {
                // A todo in conflict keeps every later change of the app's with the conflict.
                let conflict = state.conflicts[held]
                state.conflicts[held] = TodoConflict(todoId: conflict.todoId, server: conflict.server, mine: conflict.mine, writes: conflict.writes + [write])
                state.queue.removeFirst()
                try await save(pulled: [])
                continue
            }
            do {
                let todo = try await send(write)
                state.queue.removeFirst()
                if let todo {
                    state.server[todo.id] = todo
                    // Later changes of the same todo were made on top of this one.
                    for index in state.queue.indices where state.queue[index].todoId == todo.id {
                        state.queue[index].expectedVersion = todo.version
                    }
                } else {
                    state.server[write.todoId] = nil
                }
                report.sent += 1
                try await save(pulled: [])
            } catch TodosError.conflict(let current) {
                let mine = view(of: write.todoId)
                let held = state.queue.filter { $0.todoId == write.todoId }
                state.queue.removeAll { $0.todoId == write.todoId }
                state.server[current.id] = current
                state.conflicts.append(TodoConflict(todoId: write.todoId, server: current, mine: mine, writes: held))
                report.conflicts += 1
                try await save(pulled: [])
            } catch TodosError.notFound {
                // Deleted on appd meanwhile: the app's changes to it have nothing to change.
                state.queue.removeAll { $0.todoId == write.todoId }
                state.server[write.todoId] = nil
                report.gone += 1
                try await save(pulled: [])
            } catch let error where Self.isForGood(error) {
                let dropped = state.queue.filter { $0.todoId == write.todoId }
                state.queue.removeAll { $0.todoId == write.todoId }
                let reason = (error as? any LocalizedError)?.errorDescription ?? "\(error)"
                let name: String?
                switch error {
                case let error as any WireError: name = error.wireName
                case AppdClientError.server(_, let serverName, _): name = serverName
                default: name = nil
                }
                state.rejected += dropped.map { RejectedTodoWrite(write: $0, reason: reason, error: name) }
                state.rejected = Array(state.rejected.suffix(Self.rejectedKept))
                report.rejected += dropped.count
                try await save(pulled: [])
            }
        }
    }

    private func send(_ write: QueuedTodoWrite) async throws -> Todo? {
        let key = write.key
        switch write.change {
        case .add(let title, let notes, let dueAt):
            return try await service.add(title: title, notes: notes, due: dueAt.flatMap(Date.init(rfc3339:)), id: write.todoId, idempotencyKey: key)
        case .update(let title, let notes, let dueAt):
            let edit = TodoEdit(
                title: title, notes: notes.map { $0.isEmpty ? nil : $0 },
                due: dueAt.map { $0.isEmpty ? nil : Date(rfc3339: $0) })
            return try await service.update(id: write.todoId, edit, expectedVersion: write.expectedVersion, idempotencyKey: key)
        case .complete:
            return try await service.complete(id: write.todoId, expectedVersion: write.expectedVersion, idempotencyKey: key)
        case .reopen:
            return try await service.reopen(id: write.todoId, expectedVersion: write.expectedVersion, idempotencyKey: key)
        case .delete:
            try await service.delete(id: write.todoId, expectedVersion: write.expectedVersion, idempotencyKey: key)
            return nil
        }
    }

    /// Whether appd refused a change for good (resending it cannot help), rather than "not
    /// now" (unreachable, busy, signed out, appd's own failure: the queue waits).
    static func isForGood(_ error: any Error) -> Bool {
        let status: Int
        switch error {
        case let error as any WireError:
            status = (ContractCategories.all[error.wireName] ?? .internal).httpStatus
        case AppdClientError.server(let code, _, _):
            status = code
        default:
            return false
        }
        return (400..<500).contains(status) && status != 401 && status != 408 && status != 429
    }

    // MARK: - Pulling the feed

    private func pull(_ report: inout SyncReport) async throws {
        var resynced = false
        while true {
            try Task.checkCancellation()
            let page: TodosInterface.ChangePage
            do {
                page = try await service.changes(after: state.cursor, limit: 200)
            } catch TodosError.resyncRequired where !resynced {
                // The cursor is older than the tombstones kept: every todo again, from scratch.
                resynced = true
                state.cursor = nil
                continue
            }
            if state.cursor == nil { state.server = [:] }
            for change in page.changes {
                if change.deleted { state.server[change.id] = nil } else if let todo = change.todo { state.server[todo.id] = todo }
            }
            state.cursor = page.nextCursor
            report.pulled += page.changes.count
            try await save(pulled: page.changes)
            if !page.more { return }
        }
    }

    // MARK: - The state

    private func load() async throws {
        guard !loaded else { return }
        do {
            if let saved = try await store.load() { state = saved }
        } catch {
            throw OfflineTodosError.storeUnreadable("\(error)")
        }
        loaded = true
    }

    private func save(pulled: [TodoChange]) async throws {
        do {
            try await store.save(state)
        } catch {
            throw OfflineTodosError.storeUnwritable("\(error)")
        }
        let snapshot = snapshot(pulled: pulled)
        for listener in listeners.values { listener.yield(snapshot) }
    }

    private func forget(_ id: Int) { listeners[id] = nil }

    private func queue(_ write: QueuedTodoWrite) async throws -> Todo? {
        state.queue.append(write)
        try await save(pulled: [])
        wake.yield()
        return view(of: write.todoId)
    }

    private func change(_ id: String, _ change: QueuedTodoWrite.Change) async throws -> Todo? {
        try await load()
        guard view(of: id) != nil else { throw OfflineTodosError.notFound(id) }
        // Based on appd's version, or none when appd has not got the todo yet.
        let write = QueuedTodoWrite(todoId: id, change: change, expectedVersion: state.server[id]?.version, madeAt: Self.now())
        return try await queue(write)
    }

    private func view(of id: String) -> Todo? {
        state.queue.filter { $0.todoId == id }.reduce(state.server[id]) { todo, write in write.applied(to: todo) }
    }

    private func view() -> [Todo] {
        var todos = state.server
        for write in state.queue { todos[write.todoId] = write.applied(to: todos[write.todoId]) }
        return todos.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    private func snapshot(pulled: [TodoChange]) -> OfflineTodosSnapshot {
        OfflineTodosSnapshot(
            todos: view(), pending: state.queue, conflicts: state.conflicts, rejected: state.rejected, cursor: state.cursor, pulled: pulled)
    }

    static func now() -> String { WallTime.now().rfc3339 }

    /// The changes that turn appd's `server` todo into `wanted` (nil: deleted).
    static func writes(from server: Todo, to wanted: Todo?, now: String) -> [QueuedTodoWrite] {
        guard let wanted else { return [QueuedTodoWrite(todoId: server.id, change: .delete, expectedVersion: server.version, madeAt: now)] }
        var writes: [QueuedTodoWrite] = []
        if wanted.title != server.title || wanted.notes != server.notes || wanted.dueAt != server.dueAt {
            let change = QueuedTodoWrite.Change.update(
                title: wanted.title != server.title ? wanted.title : nil,
                notes: wanted.notes != server.notes ? (wanted.notes ?? "") : nil,
                dueAt: wanted.dueAt != server.dueAt ? (wanted.dueAt ?? "") : nil)
            writes.append(QueuedTodoWrite(todoId: server.id, change: change, expectedVersion: server.version, madeAt: now))
        }
        if wanted.done != server.done {
            writes.append(QueuedTodoWrite(todoId: server.id, change: wanted.done ? .complete : .reopen, expectedVersion: server.version, madeAt: now))
        }
        return writes
    }
}

/// What `OfflineTodos` holds at one moment.
public struct OfflineTodosSnapshot: Sendable, Equatable {
    /// appd's todos with the app's unsent changes made, oldest first.
    public let todos: [Todo]
    /// The changes not yet confirmed by appd, in order.
    public let pending: [QueuedTodoWrite]
    public let conflicts: [TodoConflict]
    public let rejected: [RejectedTodoWrite]
    public let cursor: Int64?
    /// The feed's changes this snapshot took in (empty when it came from something else).
    public let pulled: [TodoChange]
}

/// What one `sync()` did.
public struct SyncReport: Sendable, Equatable {
    /// Changes appd confirmed.
    public var sent = 0
    /// Changes held in a conflict.
    public var conflicts = 0
    /// Changes dropped because their todo was deleted on appd.
    public var gone = 0
    /// Changes appd refused for good.
    public var rejected = 0
    /// Changes pulled from the feed.
    public var pulled = 0
    public init() {}
}

public enum OfflineTodosError: Error, Sendable, Equatable, LocalizedError {
    /// No todo has this id on the device.
    case notFound(String)
    /// `resolve` named a todo with no conflict.
    case noConflict(String)
    /// The store's state could not be read (the app decides: show it, or start over with a new store).
    case storeUnreadable(String)
    case storeUnwritable(String)
    /// appd ended the live stream (`run` starts it again).
    case streamEnded

    public var errorDescription: String? {
        switch self {
        case .notFound: "That todo isn't there anymore."
        case .noConflict: "There's nothing to resolve for that todo."
        case .storeUnreadable: "Your saved todos couldn't be read."
        case .storeUnwritable: "Your change couldn't be saved on this device."
        case .streamEnded: "The connection to the server ended."
        }
    }

    public var failureReason: String? {
        switch self {
        case .notFound(let id): "no todo \(id) in the offline copy"
        case .noConflict(let id): "no conflict for todo \(id)"
        case .storeUnreadable(let reason): "the offline store cannot be read: \(reason)"
        case .storeUnwritable(let reason): "the offline store cannot be written: \(reason)"
        case .streamEnded: "the live event stream ended"
        }
    }
}
