// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization
#if canImport(Glibc)
import Glibc
import Runtime
#endif

/// Brings every event committed to the shared log — by this instance or another — onto this
/// instance's bus, once each, in sequence order.
///
/// Every write transaction with events sends `NOTIFY` with its instance, batch and sequence
/// range before it commits; PostgreSQL delivers notifications in commit order, and commit
/// order is sequence order (the write lock). The feed's connection LISTENs: for its own
/// batches it publishes the events it already holds, for another instance's it reads the range
/// from the log. When the link breaks it reconnects and catches up from the log past the last
/// sequence it published, so a subscriber misses nothing, live or on replay.
final class PostgresEventFeed: Sendable {
    private let connection: PostgresConnectionBox
    private let namespace: PostgresNamespace
    private let outbox: EventOutbox?
    private let logger: Logger
    /// This instance's id in the NOTIFY payloads.
    private let instance: String
    private let state = Mutex<(published: Int64, pending: [Int: [BusEvent]], stopped: Bool)>((0, [:], false))
    private let pool = BlockingPool(name: "appd-pg-events", threads: 1, queueLimit: 1, idleTimeout: nil)
    private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let finished = Atomic<Bool>(false)
    /// The server process of the feed's connection (0 while disconnected), for tests that cut it.
    let backendPID = Atomic<Int32>(0)

    init(connection: PostgresConnectionBox, namespace: PostgresNamespace, outbox: EventOutbox?, logger: Logger) throws {
        self.connection = connection
        self.namespace = namespace
        self.outbox = outbox
        self.logger = logger
        self.instance = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        // Only what commits from now on is published (as on SQLite); replay reads the log.
        let head = try connection.open().run("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events", []).rows.first?.integer("seq") ?? 0
        state.withLock { $0.published = head }
    }

    /// The NOTIFY payload of one batch of this instance.
    func payload(batch: Int, first: Int64, last: Int64) -> String { "\(instance) \(batch) \(first) \(last)" }

    /// Holds a batch's events until its notification arrives (called before its commit).
    func expect(batch: Int, events: [BusEvent]) { state.withLock { $0.pending[batch] = events } }

    /// The batch did not commit.
    func forget(batch: Int) { _ = state.withLock { $0.pending.removeValue(forKey: batch) } }

    func start() {
        do throws(PoolRefusal) {
            try pool.submit { [self] in
                listen()
                finished.store(true, ordering: .releasing)
                done.withLock { $0?.resume(); $0 = nil }
            }
        } catch {
            preconditionFailure("the event feed's own pool refused its one job: \(error)")
        }
    }

    func stop() async {
        state.withLock { $0.stopped = true }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = done.withLock { slot -> Bool in
                if finished.load(ordering: .acquiring) { return true }
                slot = continuation
                return false
            }
            if already { continuation.resume() }
        }
        connection.close()
        pool.close()
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    /// The feed's thread: LISTEN, then wait for notifications (waking every 250 ms to see
    /// whether it should stop); on a broken link, reconnect after a second and catch up.
    private func listen() {
        var listening = false
        var failures = 0
        while !stopped {
            do {
                let link = try connection.open()
                if !listening {
                    try link.executeScript("LISTEN \(namespace.quotedChannel)")
                    backendPID.store(link.backendPID, ordering: .relaxed)
                    listening = true
                    let before = state.withLock { $0.published }
                    try catchUp(on: link)
                    if failures > 0 {
                        let after = state.withLock { $0.published }
                        logger.notice("the event feed is back; caught up from the log", metadata: ["events": "\(after - before)", "attempts": "\(failures)"])
                    }
                    failures = 0
                }
                try link.waitReadable(milliseconds: 250)
                for (_, payload) in try link.notifications() { try deliver(payload, on: link) }
            } catch {
                if stopped { return }
                listening = false
                failures += 1
                // Once per outage, not once a second while the server is away.
                if failures == 1 {
                    logger.warning("lost the event feed's PostgreSQL link; reconnecting every second", metadata: ["error": "\(error)"])
                }
                for _ in 0..<4 where !stopped { usleep(250_000) }
            }
        }
    }

    private func deliver(_ payload: String, on link: PostgresConnection) throws {
        let parts = payload.split(separator: " ")
        guard parts.count == 4, let batch = Int(parts[1]), let first = Int64(parts[2]), let last = Int64(parts[3]) else {
            logger.warning("ignored a malformed event notification", metadata: ["payload": "\(payload.prefix(100))"])
            return
        }
        if parts[0] == instance, let events = state.withLock({ $0.pending.removeValue(forKey: batch) }) {
            publish(events)
        } else {
            publish(try read(on: link, after: first - 1, through: last))
        }
    }

    /// Reads and publishes everything past the last sequence published (after a reconnect,
    /// notifications sent meanwhile are lost; the log is not).
    private func catchUp(on link: PostgresConnection) throws {
        while true {
            let after = state.withLock { $0.published }
            let page = try read(on: link, after: after, through: Int64.max, limit: 1000)
            publish(page)
            if page.count < 1000 { break }
        }
        // Own batches published from the log no longer wait for their notification.
        let published = state.withLock { $0.published }
        state.withLock { $0.pending = $0.pending.filter { ($0.value.last?.sequence ?? 0) > published } }
    }

    private func read(on link: PostgresConnection, after: Int64, through last: Int64, limit: Int = 100_000) throws -> [BusEvent] {
        try link.run(
            "SELECT * FROM appd_events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?", [.integer(after), .integer(last), .integer(Int64(limit))]
        ).rows.map(EventLog.event)
    }

    /// Publishes in order what was not published yet.
    private func publish(_ events: [BusEvent]) {
        let fresh = state.withLock { s -> [BusEvent] in
            let new = events.filter { ($0.sequence ?? 0) > s.published }
            if let last = new.last?.sequence { s.published = last }
            return new
        }
        outbox?.committed(fresh)
    }
}
