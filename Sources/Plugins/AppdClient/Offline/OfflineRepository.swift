// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation

/// An offline-first repository of one kind of item (`OfflineTodos`, `OfflineConversations`):
/// the app reads and edits a copy on the device at once, and `sync()` (or `run()`, which keeps
/// at it) brings appd and the copy together.
///
/// - Every change is queued with the idempotency key made with it and the version it was
///   based on, persisted before the call returns, and sent in order: a resend after a lost
///   reply, a crash of appd or of the app has its effect once. A change's successor on the
///   same item is based on the version appd gave the change.
/// - The copy follows appd's change feed from a persisted cursor (tombstones delete; a cursor
///   older than the tombstones kept starts again from an empty one), then the live event
///   stream from where the feed ended: no gap, nothing applied twice.
/// - A change appd refuses because the item changed there meanwhile is never dropped or
///   forced: it waits in `conflicts` with both versions until `resolve` says which wins.
///   One appd refuses for good (invalid, over a quota) goes to `rejected` with the reason.
///
/// The item's id is the app's from the start (`Todo.newID()`), so a view keyed by it never
/// sees an item change identity when appd confirms it.
public actor OfflineRepository<Kind: OfflineKind> {
    public let service: Kind.Service
    public let store: any OfflineStore<Kind>
    /// Refusals kept in `rejected` (the oldest go first).
    public static var rejectedKept: Int { 100 }

    private var state = OfflineState<Kind>()
    private var loaded = false
    private var running: Task<SyncReport, any Error>?
    private var again = false
    private var listeners: [Int: AsyncStream<OfflineSnapshot<Kind>>.Continuation] = [:]
    private var nextListener = 0
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    public init(service: Kind.Service, store: any OfflineStore<Kind>) {
        self.service = service
        self.store = store
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: - What the app reads

    /// The items as the app sees them: appd's with the app's unsent changes made, in the
    /// kind's order.
    public func items() async throws -> [Kind.Item] {
        try await load()
        return view()
    }

    /// Everything at once, now and after every change (the current one first): what a view
    /// model observes.
    public func snapshots() async throws -> AsyncStream<OfflineSnapshot<Kind>> {
        try await load()
        let (stream, continuation) = AsyncStream.makeStream(of: OfflineSnapshot<Kind>.self, bufferingPolicy: .bufferingNewest(16))
        let id = nextListener
        nextListener += 1
        listeners[id] = continuation
        // Unstructured: `onTermination` is synchronous: this hops onto the actor to forget the listener.
        continuation.onTermination = { [weak self] _ in Task { await self?.forget(id) } }
        continuation.yield(snapshot(pulled: []))
        return stream
    }

    public func snapshot() async throws -> OfflineSnapshot<Kind> {
        try await load()
        return snapshot(pulled: [])
    }

    // MARK: - What the app changes (on the device at once; on appd at the next sync)

    public func delete(id: String) async throws { _ = try await change(id, Kind.deletion) }

    /// Ends a conflict: appd's item stays (`keepServer`), or the app's version (`keepMine`) or a
    /// merge (`merged`) is queued over appd's current one.
    public func resolve(_ itemId: String, _ resolution: OfflineResolution<Kind.Item>) async throws {
        try await load()
        guard let index = state.conflicts.firstIndex(where: { $0.itemId == itemId }) else { throw OfflineError.noConflict(itemId) }
        let conflict = state.conflicts.remove(at: index)
        let wanted: Kind.Item?
        switch resolution {
        case .keepServer: wanted = conflict.server
        case .keepMine: wanted = conflict.mine
        case .merged(let item): wanted = item
        }
        let now = Self.now()
        state.queue += Kind.changes(from: conflict.server, to: wanted).map {
            QueuedWrite(itemId: itemId, change: $0, expectedVersion: Kind.version(of: conflict.server), madeAt: now)
        }
        try await save(pulled: [])
        wake.yield()
    }

    /// Forgets the refusals the app has shown.
    public func clearRejected() async throws {
        try await load()
        state.rejected = []
        try await save(pulled: [])
    }

    /// Queues a change of the item `id` the app has (based on appd's version of it, or none
    /// when appd has not got it yet); returns the item as the app now sees it.
    func change(_ id: String, _ change: Kind.Change) async throws -> Kind.Item? {
        try await load()
        guard view(of: id) != nil else { throw OfflineError.notFound(id) }
        return try await queue(QueuedWrite(itemId: id, change: change, expectedVersion: state.server[id].map(Kind.version), madeAt: Self.now()))
    }

    /// Queues the change that makes a new item `id`.
    func create(_ id: String, _ change: Kind.Change) async throws -> Kind.Item? {
        try await load()
        return try await queue(QueuedWrite(itemId: id, change: change, expectedVersion: nil, madeAt: Self.now()))
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
        // Unstructured: one round of sync shared by every concurrent caller (kept in `running`), each awaiting it.
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
        let signals = Kind.signals(after: state.cursor ?? 0, from: service)
        let wakeups = self.wakeups
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await seq in signals where await !self.hasPulled(seq) {
                    try await self.sync()
                }
                throw OfflineError.streamEnded
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
            if let held = state.conflicts.firstIndex(where: { $0.itemId == write.itemId }) {
                // An item in conflict keeps every later change of the app's with the conflict.
                let conflict = state.conflicts[held]
                state.conflicts[held] = OfflineConflict(itemId: conflict.itemId, server: conflict.server, mine: conflict.mine, writes: conflict.writes + [write])
                state.queue.removeFirst()
                try await save(pulled: [])
                continue
            }
            do {
                let item = try await Kind.send(write.change, id: write.itemId, expectedVersion: write.expectedVersion, key: write.key, to: service)
                state.queue.removeFirst()
                state.server[write.itemId] = item
                if let item {
                    // Later changes of the same item were made on top of this one.
                    for index in state.queue.indices where state.queue[index].itemId == write.itemId {
                        state.queue[index].expectedVersion = Kind.version(of: item)
                    }
                }
                report.sent += 1
                try await save(pulled: [])
            } catch let error where Kind.conflictingItem(in: error) != nil {
                let current = Kind.conflictingItem(in: error)!
                let mine = view(of: write.itemId)
                let held = state.queue.filter { $0.itemId == write.itemId }
                state.queue.removeAll { $0.itemId == write.itemId }
                state.server[write.itemId] = current
                state.conflicts.append(OfflineConflict(itemId: write.itemId, server: current, mine: mine, writes: held))
                report.conflicts += 1
                try await save(pulled: [])
            } catch let error where Kind.isNotFound(error) {
                // Deleted on appd meanwhile: the app's changes to it have nothing to change.
                state.queue.removeAll { $0.itemId == write.itemId }
                state.server[write.itemId] = nil
                report.gone += 1
                try await save(pulled: [])
            } catch let error where Self.isForGood(error) {
                let dropped = state.queue.filter { $0.itemId == write.itemId }
                state.queue.removeAll { $0.itemId == write.itemId }
                let reason = (error as? any LocalizedError)?.errorDescription ?? "\(error)"
                let name: String?
                switch error {
                case let error as any WireError: name = error.wireName
                case AppdClientError.server(_, let serverName, _): name = serverName
                default: name = nil
                }
                state.rejected += dropped.map { RejectedWrite(write: $0, reason: reason, error: name) }
                state.rejected = Array(state.rejected.suffix(Self.rejectedKept))
                report.rejected += dropped.count
                try await save(pulled: [])
            }
        }
    }

    // MARK: - Pulling the feed

    private func pull(_ report: inout SyncReport) async throws {
        var resynced = false
        while true {
            try Task.checkCancellation()
            let page: OfflineFeedPage<Kind.Item>
            do {
                page = try await Kind.changes(after: state.cursor, from: service)
            } catch let error where Kind.isResyncRequired(error) && !resynced {
                // The cursor is older than the tombstones kept: every item again, from scratch.
                resynced = true
                state.cursor = nil
                continue
            }
            if state.cursor == nil { state.server = [:] }
            for change in page.changes {
                state.server[change.id] = change.deleted ? nil : change.item
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
            throw OfflineError.storeUnreadable("\(error)")
        }
        loaded = true
    }

    private func save(pulled: [OfflineFeedChange<Kind.Item>]) async throws {
        do {
            try await store.save(state)
        } catch {
            throw OfflineError.storeUnwritable("\(error)")
        }
        let snapshot = snapshot(pulled: pulled)
        for listener in listeners.values { listener.yield(snapshot) }
    }

    private func forget(_ id: Int) { listeners[id] = nil }

    private func queue(_ write: QueuedWrite<Kind>) async throws -> Kind.Item? {
        state.queue.append(write)
        try await save(pulled: [])
        wake.yield()
        return view(of: write.itemId)
    }

    private func view(of id: String) -> Kind.Item? {
        state.queue.filter { $0.itemId == id }.reduce(state.server[id]) { item, write in write.applied(to: item) }
    }

    private func view() -> [Kind.Item] {
        var items = state.server
        for write in state.queue { items[write.itemId] = write.applied(to: items[write.itemId]) }
        return items.values.sorted(by: Kind.precedes)
    }

    private func snapshot(pulled: [OfflineFeedChange<Kind.Item>]) -> OfflineSnapshot<Kind> {
        OfflineSnapshot(items: view(), pending: state.queue, conflicts: state.conflicts, rejected: state.rejected, cursor: state.cursor, pulled: pulled)
    }

    static func now() -> String { WallTime.now().rfc3339 }

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
}

/// What an `OfflineRepository` holds at one moment.
public struct OfflineSnapshot<Kind: OfflineKind>: Sendable, Equatable {
    /// appd's items with the app's unsent changes made, in the kind's order.
    public let items: [Kind.Item]
    /// The changes not yet confirmed by appd, in order.
    public let pending: [QueuedWrite<Kind>]
    public let conflicts: [OfflineConflict<Kind>]
    public let rejected: [RejectedWrite<Kind>]
    public let cursor: Int64?
    /// The feed's changes this snapshot took in (empty when it came from something else).
    public let pulled: [OfflineFeedChange<Kind.Item>]
}

/// What one `sync()` did.
public struct SyncReport: Sendable, Equatable {
    /// Changes appd confirmed.
    public var sent = 0
    /// Changes held in a conflict.
    public var conflicts = 0
    /// Changes dropped because their item was deleted on appd.
    public var gone = 0
    /// Changes appd refused for good.
    public var rejected = 0
    /// Changes pulled from the feed.
    public var pulled = 0
    public init() {}
}

public enum OfflineError: Error, Sendable, Equatable, LocalizedError {
    /// No item has this id on the device.
    case notFound(String)
    /// `resolve` named an item with no conflict.
    case noConflict(String)
    /// The store's state could not be read (the app decides: show it, or start over with a new store).
    case storeUnreadable(String)
    case storeUnwritable(String)
    /// appd ended the live stream (`run` starts it again).
    case streamEnded

    public var errorDescription: String? {
        switch self {
        case .notFound: "That isn't there anymore."
        case .noConflict: "There's nothing to resolve for that."
        case .storeUnreadable: "What's saved on this device couldn't be read."
        case .storeUnwritable: "Your change couldn't be saved on this device."
        case .streamEnded: "The connection to the server ended."
        }
    }

    public var failureReason: String? {
        switch self {
        case .notFound(let id): "no item \(id) in the offline copy"
        case .noConflict(let id): "no conflict for \(id)"
        case .storeUnreadable(let reason): "the offline store cannot be read: \(reason)"
        case .storeUnwritable(let reason): "the offline store cannot be written: \(reason)"
        case .streamEnded: "the live event stream ended"
        }
    }
}
