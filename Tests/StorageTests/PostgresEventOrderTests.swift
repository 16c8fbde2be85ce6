import Bus
import Synchronization
import Testing
import TestSupport
@testable import Storage

/// The event log across instances on PostgreSQL: with writers on several instances, commit
/// order is not sequence order unless appends are serialised. Each test runs with the write
/// lock (what appd does) and without it (the naive log), and shows the naive one losing events
/// — so the checks can fail, and the lock is what makes them pass.
@Suite(.enabled(if: TestDatabase.hasPostgres, Comment(rawValue: TestDatabase.skipped)))
struct PostgresEventOrderTests {
    func instances(_ count: Int, serialized: Bool) throws -> [PostgresDatabase] {
        let url = try TestDatabase.postgres()
        var options = PostgresDatabase.Options()
        options.readers = 1
        options.serializeWrites = serialized
        return try (0..<count).map { _ in try PostgresDatabase(url: url, bus: nil, options: options) }
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

    @Test(arguments: [true, false])
    func aLateCommitIsNotSkippedByASinceReader(serialized: Bool) async throws {
        let dbs = try instances(3, serialized: serialized)
        let (a, b, reader) = (dbs[0], dbs[1], EventLog(database: dbs[2]))
        let done = StopFlag()
        let following = Task { try await follow(reader, until: done) }
        // A takes a sequence number, then holds its transaction open; B appends meanwhile.
        let slow = Task { try await append("slow on A", to: a, hold: 0.4) }
        try await Task.sleep(for: .milliseconds(100))
        let fast = try await append("fast on B", to: b)
        let slowSeq = try await slow.value
        try await Task.sleep(for: .milliseconds(50))
        done.set()
        let seen = try await following.value
        if serialized {
            // B waited for A's commit: its sequence is higher, and the reader saw both in order.
            #expect(fast > slowSeq)
            #expect(seen == [slowSeq, fast])
        } else {
            // Without the lock B commits a higher sequence first; the reader moves past A's.
            #expect(fast > slowSeq)
            #expect(seen == [fast], "the naive log was expected to lose the late commit")
        }
        for db in dbs { await db.close() }
    }

    @Test(arguments: [true, false])
    func concurrentAppendsOnTwoInstancesReachEveryReaderOnceInOrder(serialized: Bool) async throws {
        let dbs = try instances(3, serialized: serialized)
        let (a, b, third) = (dbs[0], dbs[1], dbs[2])
        // A live subscriber on the third instance: events written through A and B arrive on its bus.
        let bus = EventBus()
        third.attach(bus: bus)
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
        if serialized {
            #expect(seen == all, "the since reader saw each event once, in sequence order")
            var received: [Int64] = []
            for try await event in live {
                received.append(event.sequence ?? -1)
                if received.count == all.count { break }
            }
            #expect(received == all, "the live subscriber on a third instance got each event once, in order")
        } else {
            #expect(seen.count < all.count, "the naive log was expected to lose events whose commit came late")
        }
        live.cancel()
        for db in dbs { await db.close() }
    }
}

/// Tells a reader loop to make its last pass.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
