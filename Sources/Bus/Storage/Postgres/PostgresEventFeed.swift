// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization
#if canImport(Glibc)
import Glibc
import Runtime
#endif

/// Brings every event committed to the shared log — by this instance or another — onto this
/// instance's bus, once each, in position order.
///
/// Every write transaction with events sends `NOTIFY` (with how many it logged) before it
/// commits. The feed's connection LISTENs; woken, it reads the log past the last
/// position it published and below the horizon (`appd_event_horizon()`, see
/// `PostgresWriteAttempt`): what lies below can no longer change, so nothing that commits
/// later can land behind what was published. Committed events still above the horizon (an
/// older transaction is still running) are looked for again soon after, backing off to every
/// 250 ms, until the horizon passes them. When the link breaks the feed reconnects and catches up from
/// the log the same way, so a subscriber misses nothing, live or on replay.
final class PostgresEventFeed: Sendable {
    private let connection: PostgresConnectionBox
    private let namespace: PostgresNamespace
    private let outbox: EventOutbox?
    private let logger: Logger
    private let signals: DeploymentSignals?
    /// The last position published, this instance's committed events not yet published (by
    /// position: the feed publishes them from memory, not read back from the log), the owners
    /// this instance erased lately (when), whether to stop.
    private let state = Mutex<FeedState>(FeedState())
    /// How long an erased owner's events are read from the log rather than kept in memory
    /// (`committed`): far longer than a batch takes from its commit to handing its events over.
    static let erasureMemory: Duration = .seconds(60)
    /// At most this many recent erasures are remembered (the oldest forgotten first).
    static let erasuresRemembered = 10_000
    private let pool = BlockingPool(name: "appd-pg-events", threads: 1, queueLimit: 1, idleTimeout: nil)
    private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let finished = Atomic<Bool>(false)
    /// The server process of the feed's connection (0 while disconnected), for tests that cut it.
    let backendPID = Atomic<Int32>(0)

    /// The horizon (positions below it are final) and the newest position committed, in one
    /// snapshot: when the newest is not below the horizon, committed events wait for it.
    static let horizon = "SELECT appd_event_horizon() AS h, (SELECT COALESCE(MAX(seq), 0) FROM appd_events) AS newest"

    init(connection: PostgresConnectionBox, namespace: PostgresNamespace, outbox: EventOutbox?, signals: DeploymentSignals?, logger: Logger) throws {
        self.connection = connection
        self.signals = signals
        self.namespace = namespace
        self.outbox = outbox
        self.logger = logger
        // Only what becomes final from now on is published (as on SQLite); replay reads the log.
        let head = try connection.open().run("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events WHERE seq < appd_event_horizon()", []).rows.first?.integer("seq") ?? 0
        state.withLock { $0.published = head }
    }

    /// The NOTIFY payload of one transaction's events: how many (the feed reads the log; a
    /// notification only wakes it).
    static func payload(events: Int) -> String { "\(events)" }

    /// This instance's events of a transaction that committed, as logged: published from memory
    /// once the horizon passes them (if the log was read past them first, they are dropped).
    ///
    /// An erasure (`erasing`: the owners the transaction erased) rewrites rows committed before
    /// it, so copies in memory of events about those owners would publish what the log no
    /// longer holds — to a subscriber that came after the account was deleted. They are
    /// dropped and read from the log instead, and so is every event about an owner erased in
    /// the last minute that another batch hands over later (it may have committed before the
    /// erasure and reached this call after it). The erasing transaction's own events are as
    /// logged (tombstones, or its notice of the deletion) and kept.
    func committed(_ events: [BusEvent], erasing: Set<String> = []) {
        let now = ContinuousClock.now
        state.withLock { s in
            if !erasing.isEmpty {
                s.own = s.own.filter { $0.value.owner.map { !erasing.contains($0) } ?? true }
                for owner in erasing { s.erased[owner] = now }
            }
            s.forgetErasures(before: now - Self.erasureMemory, keeping: Self.erasuresRemembered, now: now)
            for event in events {
                guard let position = event.sequence, position > s.published else { continue }
                if let owner = event.owner, !erasing.contains(owner), s.erased[owner] != nil { continue }
                s.own[position] = event
            }
        }
    }

    func start() {
        do throws(PoolRefusal) {
            try pool.submit { [self] in
                listen()
                finished.store(true, ordering: .releasing)
                done.withLock {
                    $0?.resume(); $0 = nil
                }
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
    /// whether it should stop, sooner while committed events wait for the horizon); on a
    /// broken link, reconnect after a second and catch up. Signals (`DeploymentSignals`) come on
    /// the same link: each handed on as it arrives, the link confirmed with a round trip at
    /// least every 250 ms, `.missed` after every (re)LISTEN.
    private func listen() {
        var listening = false
        var failures = 0
        var heldBack = false
        var poll: Int32 = 2
        var confirmed = ContinuousClock.now
        // Events notified while catching up after a (re)LISTEN: read at once.
        var pending = false
        while !stopped {
            do {
                let link = try connection.open()
                if !listening {
                    let began = ContinuousClock.now
                    try link.executeScript("LISTEN \(namespace.quotedChannel); LISTEN \(namespace.quotedSignalChannel)")
                    backendPID.store(link.backendPID, ordering: .relaxed)
                    listening = true
                    // Whatever was signalled while not listening is lost: forget it all.
                    signals?.deliver(.missed)
                    let before = state.withLock { $0.published }
                    heldBack = try catchUp(on: link)
                    pending = try take(link.notifications())
                    signals?.confirm(began)
                    confirmed = began
                    if failures > 0 {
                        let after = state.withLock { $0.published }
                        logger.notice(
                            "the event feed is back; caught up from the log", metadata: ["published.from": "\(before)", "published.to": "\(after)", "attempts": "\(failures)"])
                    }
                    failures = 0
                }
                // What arrived during the last queries is already read off the socket.
                var woken = try take(link.notifications()) || pending
                pending = false
                if !woken { try link.waitReadable(milliseconds: heldBack ? poll : 250) }
                let began = ContinuousClock.now
                let confirming = signals != nil && confirmed.duration(to: began) >= .milliseconds(250)
                if confirming { _ = try link.run("SELECT 1", []) }
                // A notification only wakes the feed: the log says what to read.
                if try take(link.notifications()) { woken = true }
                if confirming {
                    signals?.confirm(began)
                    confirmed = began
                }
                guard woken || heldBack else { continue }
                let stillHeld = try catchUp(on: link)
                // A range held back by an older transaction: look again soon, then less often.
                poll = stillHeld && !woken ? min(poll * 2, 250) : 2
                heldBack = stillHeld
            } catch {
                signals?.lost()
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
        signals?.lost()
    }

    /// Hands each signal on; returns whether any notification of committed events came.
    private func take(_ notifications: [(channel: String, payload: String)]) -> Bool {
        var events = false
        for notification in notifications {
            if notification.channel == namespace.signalChannel {
                signals?.deliver(.message(notification.payload))
            } else {
                events = true
            }
        }
        return events
    }

    /// Reads and publishes every final event past the last position published (after a
    /// reconnect, notifications sent meanwhile are lost; the log is not). Returns whether
    /// committed events are still at or above the horizon (to be read once they are final:
    /// their notifications may have come already, or been lost with a broken link).
    private func catchUp(on link: PostgresConnection) throws -> Bool {
        guard let row = try link.run(Self.horizon, []).rows.first, let horizon = row.integer("h"), let newest = row.integer("newest") else {
            throw StorageError(kind: .other, message: "appd_event_horizon() returned nothing")
        }
        while true {
            // This instance's own final events come from memory: the log is read for the others'.
            let (after, own) = state.withLock { s in
                (s.published, s.own.filter { $0.key > s.published && $0.key < horizon }.sorted { $0.key < $1.key }.prefix(1000))
            }
            let skipped = "{" + own.map { String($0.key) }.joined(separator: ",") + "}"
            let read = try link.run(
                "SELECT * FROM appd_events WHERE seq > ? AND seq < ? AND seq <> ALL(?::bigint[]) ORDER BY seq LIMIT 1000",
                [.integer(after), .integer(horizon), .text(skipped)]
            ).rows.map(EventLog.event)
            // Both lists are in position order; up to the last of a list cut at 1,000, everything
            // of both is known (what lies past it waits for the next round).
            let through = min(
                read.count == 1000 ? read.last?.sequence ?? Int64.max : Int64.max,
                own.count == 1000 ? own.last?.key ?? Int64.max : Int64.max)
            var page = (read + own.map(\.value)).filter { ($0.sequence ?? 0) <= through }
            page.sort { ($0.sequence ?? 0) < ($1.sequence ?? 0) }
            publish(page)
            if read.count < 1000 && own.count < 1000 { break }
        }
        return newest >= horizon
    }

    /// Publishes in order what was not published yet.
    private func publish(_ events: [BusEvent]) {
        let fresh = state.withLock { s -> [BusEvent] in
            let new = events.filter { ($0.sequence ?? 0) > s.published }
            if let last = new.last?.sequence {
                s.published = last
                s.own = s.own.filter { $0.key > last }
            }
            return new
        }
        outbox?.committed(fresh)
    }
}

/// The feed's state, confined to its mutex.
struct FeedState {
    var published: Int64 = 0
    var own: [Int64: BusEvent] = [:]
    var erased: [String: ContinuousClock.Instant] = [:]
    /// When `forgetErasures` walks `erased` next (once a second at most: it runs with every commit).
    var nextForget = ContinuousClock.now
    var stopped = false

    /// Forgets erasures older than `cutoff` (at most once a second), and the oldest beyond `limit`.
    mutating func forgetErasures(before cutoff: ContinuousClock.Instant, keeping limit: Int, now: ContinuousClock.Instant) {
        guard !erased.isEmpty, now >= nextForget || erased.count > limit else { return }
        nextForget = now + .seconds(1)
        erased = erased.filter { $0.value >= cutoff }
        if erased.count > limit {
            for (owner, _) in erased.sorted(by: { $0.value < $1.value }).prefix(erased.count - limit) { erased[owner] = nil }
        }
    }
}
