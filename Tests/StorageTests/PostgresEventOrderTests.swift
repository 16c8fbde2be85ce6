// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing
import TestSupport
@testable import Storage

/// The event log across instances on PostgreSQL: writers on several instances commit in any
/// order, so positions are not commit order. The late-commit test shows a naive reader
/// (`seq > since` alone) passing an event that commits late, and appd's reader (below the
/// horizon) taking it in order — so the check can fail, and the horizon is what makes it pass.
/// Every test that needs a PostgreSQL server, in one suite: without one, `swift test` says in
/// one line that they were skipped and how to run them.
@Suite(.enabled(if: TestDatabase.hasPostgres, Comment(rawValue: TestDatabase.skipped)))
enum PostgresTests {}

extension PostgresTests {
    @Suite struct EventOrder {
        /// `count` instances on one fresh schema; the last relays what it sees to `bus`.
        func instances(_ count: Int, bus: EventBus? = nil, url: String? = nil) async throws -> [PostgresDatabase] {
            let url = if let url { url } else { try await TestDatabase.pool.run { try TestDatabase.postgres() } }
            var options = PostgresDatabase.Options()
            options.readers = 1
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

        /// The race made deterministic: A logs an event and then waits (inside its transaction) for
        /// a lock the test holds; B logs one and commits meanwhile, at a higher position. A naive
        /// reader (`seq > since` alone) reads B's and would move past A's for good; appd's reader
        /// sees neither while A is open (B's is above the horizon), then both in position order,
        /// and so does a live subscriber on a third instance.
        @Test func aLateCommitIsNotSkippedByASinceReader() async throws {
            let bus = EventBus()
            let dbs = try await instances(3, bus: bus)
            let (a, b, third) = (dbs[0], dbs[1], dbs[2])
            let reader = EventLog(database: third)
            let live = bus.subscribe(try TopicFilter(NoteAdded.topic), options: SubscriptionOptions(capacity: 100, overflow: .disconnect))
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
            let fastSeq = try await append("on B", to: b)
            let naive = try await third.read { tx in try tx.query("SELECT seq FROM appd_events ORDER BY seq").compactMap { $0.integer("seq") } }
            #expect(naive == [fastSeq], "a naive reader sees B's event now, and its cursor would pass A's")
            #expect(try await reader.events(after: 0, limit: 100).isEmpty, "B's event is not final while A, an older transaction, is open")
            #expect(try await reader.lastSequence() == 0)
            _ = try probe.run("SELECT pg_advisory_unlock(?, ?)", [.integer(gate.0), .integer(gate.1)])
            let slowSeq = try await slow.value
            #expect(slowSeq < fastSeq, "A's event has the lower position and committed last")
            // Transactions of other tests on the same server hold the horizon too (it is the
            // server's): read on as `Subscribe(since:)` does until both came.
            var seen: [Int64] = []
            for _ in 0..<1000 where seen.count < 2 {
                seen += try await reader.events(after: seen.last ?? 0, limit: 100).compactMap(\.sequence)
                if seen.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
            }
            #expect(seen == [slowSeq, fastSeq])
            var received: [Int64] = []
            for try await event in live {
                received.append(event.sequence ?? -1)
                if received.count == 2 { break }
            }
            #expect(received == [slowSeq, fastSeq], "the live subscriber on the third instance got both, in position order")
            live.cancel()
            for db in dbs { await db.close() }
        }

        /// Read-modify-write in Swift on two instances at once (the pattern of a quota or a
        /// throttle): serializable transactions and batches run again on a conflict lose no update.
        @Test func concurrentReadModifyWritesOnTwoInstancesLoseNoUpdate() async throws {
            let dbs = try await instances(2)
            try await dbs[0].write { tx in
                try tx.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
                try tx.execute("INSERT INTO counter (id, n) VALUES (1, 0)")
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for db in dbs {
                    for _ in 0..<4 {
                        group.addTask {
                            for _ in 0..<25 {
                                // A batch that lost every one of its attempts answers `busy` (nothing
                                // written): its caller retries, as the error says. No update is lost.
                                while true {
                                    do {
                                        try await db.write { tx in
                                            let n = try tx.query("SELECT n FROM counter WHERE id = 1").first?.integer("n") ?? -1
                                            try tx.execute("UPDATE counter SET n = ? WHERE id = 1", [.integer(n + 1)])
                                        }
                                        break
                                    } catch let error as StorageError where error.kind == .busy {
                                        continue
                                    }
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let n = try await dbs[1].read { tx in try tx.query("SELECT n FROM counter WHERE id = 1").first?.integer("n") }
            #expect(n == 200)
            for db in dbs { await db.close() }
        }

        /// A log numbered by the identity column (earlier versions of appd): the positions that
        /// follow are above every old one, so a cursor a client kept still reads on from where it was.
        @Test func aCursorIntoALogFromBeforeTheHorizonStaysValid() async throws {
            let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
            let old = try PostgresConnection(conninfo: url, setup: "SET client_min_messages = warning")
            try old.executeScript(SQLDialect.postgresDDL(EventLog.schema))
            for i in 1...5 {
                _ = try old.run("INSERT INTO appd_events (topic, time_ns, payload) VALUES ('notes.added', 0, ?)", [.text("{\"id\":\(i),\"text\":\"old\"}")])
            }
            let db = try await instances(1, url: url)[0]
            let new = try await append("new", to: db)
            #expect(new > 5)
            #expect(try await EventLog(database: db).settle(within: .seconds(30)))
            let after3 = try await EventLog(database: db).events(after: 3, limit: 100).compactMap(\.sequence)
            #expect(after3 == [4, 5, new])
            await db.close()
        }

        /// Events logged at the commit (one statement per batch) keep erasure's meaning.
        @Test func anErasureCoversTheEventsAppendedBeforeItInTheSameTransaction() async throws {
            let db = try await instances(1)[0]
            let logged = try await eraseBetweenAppends(db)
            #expect(logged["after"] == false && logged["other user"] == false && logged.count == 3, "\(logged)")
            #expect(logged.keys.contains { $0.hasPrefix("redacted:") }, "\(logged)")
            await db.close()
        }

        /// An instance publishes its own committed events from memory once the horizon passes
        /// them. An erasure that commits meanwhile rewrites the rows; what the bus publishes
        /// must be what the log now holds (a tombstone), not the copy in memory — a subscriber
        /// arriving after an account's deletion would otherwise read what was erased.
        @Test func anErasureWhileTheHorizonIsHeldBackPublishesTheTombstoneNotTheMemory() async throws {
            let bus = EventBus()
            let db = try await instances(1, bus: bus)[0]
            let live = bus.subscribe(try TopicFilter(NoteAbout.topic), options: SubscriptionOptions(capacity: 100, overflow: .disconnect))
            // An older transaction with an id holds the horizon below everything that follows.
            let holder = try PostgresConnection(conninfo: try TestDatabase.postgres(), setup: "SET client_min_messages = warning")
            try holder.executeScript("BEGIN; SELECT pg_current_xact_id()")
            try await db.write { tx in try tx.append(NoteAbout(userId: "u1", text: "the secret"), causedBy: nil) }
            try await db.write { tx in
                try tx.redactEvents(about: "u1")
                try tx.append(NoteAbout(userId: "u1", text: "the notice"), causedBy: nil)
            }
            try holder.executeScript("COMMIT")
            var received: [BusEvent] = []
            for try await event in live {
                received.append(event)
                if received.count == 2 { break }
            }
            #expect(received.map(\.redacted) == [true, false])
            #expect(received.first?.decode(as: NoteAbout.self) == nil)
            #expect(received.last?.decode(as: NoteAbout.self)?.text == "the notice")
            live.cancel()
            await db.close()
        }

        /// Two instances' batches log events about an owner while a third erases it: whichever
        /// commits first, no event about the owner stays readable but the erasure's own notice.
        @Test func anErasureRacingOtherInstancesLeavesNoEventAboutTheOwnerReadable() async throws {
            let dbs = try await instances(3)
            let (readable, total) = try await eraseWhileOthersLog(erasing: dbs[2], appending: [dbs[0], dbs[1]])
            #expect(readable == ["the notice"] && total == 2 * 4 * 20 + 2, "\(readable), \(total) logged")
            for db in dbs { await db.close() }
        }

        @Test func concurrentAppendsOnThreeInstancesReachEveryReaderOnceInOrder() async throws {
            // A live subscriber on the third instance: events written through A, B and itself arrive on its bus.
            let bus = EventBus()
            let dbs = try await instances(3, bus: bus)
            let (a, b, third) = (dbs[0], dbs[1], dbs[2])
            let live = bus.subscribe(try TopicFilter(NoteAdded.topic), options: SubscriptionOptions(capacity: 100_000, overflow: .disconnect))
            let done = StopFlag()
            let following = Task { try await follow(EventLog(database: third), until: done) }
            // 3 instances × 8 writers × 15 appends, the third being the one whose bus is watched (its own
            // events reach it from memory, the others' from the log); one in five holds its transaction open a while.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (name, db) in [("A", a), ("B", b), ("C", third)] {
                    for writer in 0..<8 {
                        group.addTask {
                            for i in 0..<15 { _ = try await append("\(name)\(writer).\(i)", to: db, hold: i % 5 == 0 ? 0.02 : 0) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Other tests' transactions on the same server hold the horizon too: the reader's last
            // pass comes once everything committed is final.
            #expect(try await EventLog(database: third).settle(within: .seconds(30)))
            done.set()
            let seen = try await following.value
            let all = try await third.read { tx in try tx.query("SELECT seq FROM appd_events ORDER BY seq").compactMap { $0.integer("seq") } }
            #expect(all.count == 360)
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
