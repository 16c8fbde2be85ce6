// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing
import TestSupport
@testable import Storage

/// The event log across instances on PostgreSQL: with writers on several instances, commit
/// order is not sequence order unless appends are serialised. The late-commit test runs with
/// the write lock (what appd does) and without it (the naive log), and shows the naive one
/// losing the event — so the check can fail, and the lock is what makes it pass.
/// Every test that needs a PostgreSQL server, in one suite: without one, `swift test` says in
/// one line that they were skipped and how to run them.
@Suite(.enabled(if: TestDatabase.hasPostgres, Comment(rawValue: TestDatabase.skipped)))
enum PostgresTests {}

extension PostgresTests {
@Suite struct EventOrder {
    /// `count` instances on one fresh schema; the last relays what it sees to `bus`.
    func instances(_ count: Int, serialized: Bool, bus: EventBus? = nil) async throws -> [PostgresDatabase] {
        let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
        var options = PostgresDatabase.Options()
        options.readers = 1
        options.serializeWrites = serialized
        var all: [PostgresDatabase] = []
        for i in 0..<count {
            all.append(try await PostgresDatabase.open(url: url, outbox: i == count - 1 ? .relaying(to: bus) : nil, options: options))
        }
        return all
    }

    /// One event, committed after holding its transaction open for `hold`.
    func append(_ text: String, to database: any Database, hold: Double = 0) async throws -> Int64 {
        try await database.write { tx in
            let seq = try tx.append(BusEvent(NoteAdded(id: 0, text: text), causedBy: nil))
            if hold > 0 { try tx.execute("SELECT pg_sleep(?)", [.real(hold)]) }
            return seq
        }
    }

    /// A `since` reader: reads what follows the last sequence it saw, as `Subscribe(since:)`
    /// and durable consumers do, until told to stop; then once more.
    func follow(_ log: EventLog, until done: StopFlag) async throws -> [Int64] {
        var seen: [Int64] = []
        var since: Int64 = 0
        while true {
            let finished = done.isSet
            for event in try await log.events(after: since, limit: 1000) {
                seen.append(event.sequence ?? -1)
                since = event.sequence ?? since
            }
            if finished { return seen }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Whether some connection waits for the advisory lock (`classid`, `objid`).
    func someoneWaits(on lock: (Int64, Int64), _ probe: PostgresConnection) throws -> Bool {
        try !probe.run(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid::int = ? AND objid::int = ?", [.integer(lock.0), .integer(lock.1)]
        ).rows.isEmpty
    }

    func waitUntil(_ condition: () throws -> Bool) async throws {
        for _ in 0..<1000 where !(try condition()) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try condition())
    }

    /// The race made deterministic: A takes a sequence number and then waits (inside its
    /// transaction) for a lock the test holds; B appends meanwhile; a `since` reader reads; the
    /// test lets A commit; the reader reads on from where it was.
    @Test(arguments: [true, false])
    func aLateCommitIsNotSkippedByASinceReader(serialized: Bool) async throws {
        let dbs = try await instances(3, serialized: serialized)
        let (a, b, reader) = (dbs[0], dbs[1], EventLog(database: dbs[2]))
        let probe = try PostgresConnection(conninfo: try TestDatabase.postgres(), setup: "SET client_min_messages = warning")
        let gate: (Int64, Int64) = (Int64(UInt16.random(in: 1...60000)), 4242)
        _ = try probe.run("SELECT pg_advisory_lock(?, ?)", [.integer(gate.0), .integer(gate.1)])
        let slow = Task {
            try await a.write { tx in
                let seq = try tx.append(BusEvent(NoteAdded(id: 0, text: "late on A"), causedBy: nil))
                try tx.execute("SELECT pg_advisory_xact_lock_shared(?, ?)", [.integer(gate.0), .integer(gate.1)])
                return seq
            }
        }
        try await waitUntil { try someoneWaits(on: gate, probe) }
        let fast = Task { try await append("on B", to: b) }
        if serialized {
            // B waits for the write lock A holds until its commit.
            try await waitUntil { try someoneWaits(on: (a.namespace.key, 1), probe) }
        } else {
            _ = try await fast.value
        }
        var seen = try await reader.events(after: 0, limit: 100).compactMap(\.sequence)
        let since = seen.last ?? 0
        _ = try probe.run("SELECT pg_advisory_unlock(?, ?)", [.integer(gate.0), .integer(gate.1)])
        let (slowSeq, fastSeq) = (try await slow.value, try await fast.value)
        seen += try await reader.events(after: since, limit: 100).compactMap(\.sequence)
        if serialized {
            // B's sequence comes after A's commit: the reader saw nothing early, then both in order.
            #expect(fastSeq > slowSeq)
            #expect(seen == [slowSeq, fastSeq])
        } else {
            // Without the lock, A's lower sequence commits after B's: the reader moved past it.
            #expect(fastSeq > slowSeq)
            #expect(seen == [fastSeq], "the naive log loses the late commit")
        }
        for db in dbs { await db.close() }
    }

    /// Events logged at the commit (one statement per batch) keep erasure's meaning.
    @Test func anErasureCoversTheEventsAppendedBeforeItInTheSameTransaction() async throws {
        let db = try await instances(1, serialized: true)[0]
        let logged = try await eraseBetweenAppends(db)
        #expect(logged["after"] == false && logged["other user"] == false && logged.count == 3, "\(logged)")
        #expect(logged.keys.contains { $0.hasPrefix("redacted:") }, "\(logged)")
        await db.close()
    }

    @Test func concurrentAppendsOnTwoInstancesReachEveryReaderOnceInOrder() async throws {
        // A live subscriber on the third instance: events written through A and B arrive on its bus.
        let bus = EventBus()
        let dbs = try await instances(3, serialized: true, bus: bus)
        let (a, b, third) = (dbs[0], dbs[1], dbs[2])
        let live = bus.subscribe(try TopicFilter(NoteAdded.topic), options: SubscriptionOptions(capacity: 100_000, overflow: .disconnect))
        let done = StopFlag()
        let following = Task { try await follow(EventLog(database: third), until: done) }
        // 2 instances × 8 writers × 15 appends; one in five holds its transaction open a while.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, db) in [("A", a), ("B", b)] {
                for writer in 0..<8 {
                    group.addTask {
                        for i in 0..<15 { _ = try await append("\(name)\(writer).\(i)", to: db, hold: i % 5 == 0 ? 0.02 : 0) }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await Task.sleep(for: .milliseconds(50))
        done.set()
        let seen = try await following.value
        let all = try await third.read { tx in try tx.query("SELECT seq FROM appd_events ORDER BY seq").compactMap { $0.integer("seq") } }
        #expect(all.count == 240)
        #expect(seen == all, "the since reader saw each event once, in sequence order")
        var received: [Int64] = []
        for try await event in live {
            received.append(event.sequence ?? -1)
            if received.count == all.count { break }
        }
        #expect(received == all, "the live subscriber on a third instance got each event once, in order")
        live.cancel()
        for db in dbs { await db.close() }
    }
}

/// What a broken link to PostgreSQL does: the next write connects again; the event feed
/// reconnects and catches up from the log, so a live subscriber misses nothing.
@Suite struct Link {
    /// A statement prepared before its table changed shape (a migration) is prepared again.
    @Test func aPreparedStatementSurvivesATableChangingShape() async throws {
        let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
        let link = try PostgresConnection(conninfo: url, setup: "SET client_min_messages = warning")
        try link.executeScript("CREATE TABLE shape (a BIGINT); INSERT INTO shape VALUES (1)")
        #expect(try link.run("SELECT * FROM shape", []).rows.first?.columns == ["a"])
        try link.executeScript("ALTER TABLE shape ADD COLUMN b TEXT DEFAULT 'x'")
        let row = try link.run("SELECT * FROM shape", []).rows.first
        #expect(row?.columns == ["a", "b"] && row?.text("b") == "x")
    }

    @Test func afterTheServerDropsTheConnectionsWritesAndLiveEventsGoOn() async throws {
        let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
        var options = PostgresDatabase.Options()
        options.readers = 1
        let bus = EventBus()
        let database = try await PostgresDatabase.open(url: url, outbox: .relaying(to: bus), options: options)
        let live = bus.subscribe(try TopicFilter(NoteAdded.topic), options: SubscriptionOptions(capacity: 100, overflow: .disconnect))
        let first = try await database.write { tx in try tx.append(BusEvent(NoteAdded(id: 1, text: "before"), causedBy: nil)) }
        var iterator = live.makeAsyncIterator()
        #expect(try await iterator.next()?.sequence == first)

        let pids = try await database.backendPIDs()
        #expect(pids.allSatisfy { $0 > 0 })
        let probe = try PostgresConnection(conninfo: url, setup: "SET client_min_messages = warning")
        for pid in pids { _ = try probe.run("SELECT pg_terminate_backend(?)", [.integer(Int64(pid))]) }

        let second = try await database.write { tx in try tx.append(BusEvent(NoteAdded(id: 2, text: "after"), causedBy: nil)) }
        let third = try await database.write { tx in try tx.append(BusEvent(NoteAdded(id: 3, text: "after"), causedBy: nil)) }
        #expect(try await iterator.next()?.sequence == second)
        #expect(try await iterator.next()?.sequence == third)
        let now = try await database.backendPIDs()
        #expect(Set(now).isDisjoint(with: pids), "both connections are new")
        live.cancel()
        await database.close()
    }
}
}

/// Tells a reader loop to make its last pass.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
