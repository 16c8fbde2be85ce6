// SPDX-License-Identifier: Apache-2.0
import Bus
import Dispatch
import Synchronization
import Testing
@testable import Storage

@Suite struct SQLiteDatabaseTests {
    @Test func opensWithDurableSettings() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        let settings = try await database.read { transaction in
            (
                try transaction.query("PRAGMA journal_mode").first?.text("journal_mode"),
                try transaction.query("PRAGMA synchronous").first?.integer("synchronous"),
                try transaction.query("PRAGMA foreign_keys").first?.integer("foreign_keys")
            )
        }
        #expect(settings.0 == "wal")
        #expect(settings.1 == 2)  // FULL
        #expect(settings.2 == 1)
        await database.close()
    }

    @Test func committedWritesSurviveReopening() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        do {
            let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
            try await Migrator.migrate(database, notesMigrations)
            _ = try await addNote("kept", to: database)
            await database.close()
        }
        let reopened = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        let texts = try await reopened.read { try $0.query("SELECT text FROM notes").compactMap { $0.text("text") } }
        #expect(texts == ["kept"])
        #expect(try await EventLog(database: reopened).lastSequence() == 1)
        await reopened.close()
    }

    /// Hardening finding 11: text is bound and read by its byte length, so a NUL inside it is
    /// stored and compared, never a place where the text ends.
    @Test func textWithANulInsideIsStoredAndMatchedWhole() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        try await Migrator.migrate(database, notesMigrations)
        _ = try await addNote("alice", to: database)
        _ = try await addNote("line\u{0}after the NUL ☕", to: database)
        let texts = try await database.read { try $0.query("SELECT text FROM notes ORDER BY id").compactMap { $0.text("text") } }
        #expect(texts == ["alice", "line\u{0}after the NUL ☕"])
        let matched = try await database.read { try $0.query("SELECT id FROM notes WHERE text = ?", [.text("alice\u{0}junk")]).count }
        #expect(matched == 0)
        await database.close()
    }

    @Test func aFailingWriteChangesNothingAndOthersInTheBatchCommit() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<100 {
                group.addTask {
                    do {
                        try await database.write { transaction in
                            try transaction.execute("INSERT INTO notes (text) VALUES (?)", [.text("note \(i)")])
                            if i % 10 == 0 { throw Boom() }  // after its insert: must be undone
                        }
                        return true
                    } catch {
                        return false
                    }
                }
            }
            var results: [Bool] = []
            for await outcome in group { results.append(outcome) }
            return results
        }
        #expect(outcomes.filter { $0 }.count == 90)
        let count = try await database.read { try $0.query("SELECT COUNT(*) AS n FROM notes").first?.integer("n") }
        #expect(count == 90)
        await database.close()
    }

    @Test func constraintViolationsAreTypedStorageErrors() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        _ = try await addNote("same", to: database)
        do {
            _ = try await addNote("same", to: database)
            Issue.record("expected a constraint error")
        } catch let error as StorageError {
            #expect(error.kind == .constraint)
            #expect(error.wireParameters["kind"] == "constraint")
        }
        #expect(try await EventLog(database: database).lastSequence() == 1)  // the failed add logged nothing
        await database.close()
    }

    /// Reads that wait together share one snapshot, taken after each was asked for: a read asked
    /// for after a commit sees it, however many reads queue around it (a snapshot kept from one
    /// batch into the next would show the old rows).
    @Test func aReadAskedForAfterACommitSeesIt() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        _ = try await addNote("first", to: database)
        // A read that holds the reader, its snapshot taken (it saw one note), until released.
        let (started, startedSignal) = AsyncStream.makeStream(of: Int.self)
        let release = DispatchSemaphore(value: 0)
        let held = Task {
            try await database.read { tx -> Int in
                let seen = try tx.query("SELECT COUNT(*) AS n FROM notes").first?.integer("n") ?? -1
                startedSignal.yield(Int(seen))
                _ = release.wait(timeout: .now() + 30)
                return Int(try tx.query("SELECT COUNT(*) AS n FROM notes").first?.integer("n") ?? -1)
            }
        }
        var iterator = started.makeAsyncIterator()
        #expect(await iterator.next() == 1)
        _ = try await addNote("second", to: database)  // committed while the held read's snapshot is open
        // Asked for after the commit, queued behind the held read: each must see both notes.
        let later = (0..<20).map { _ in Task { try await database.read { try $0.query("SELECT COUNT(*) AS n FROM notes").first?.integer("n") } } }
        release.signal()
        #expect(try await held.value == 1)  // one snapshot for the whole read
        for read in later { #expect(try await read.value == 2) }
        _ = try await addNote("third", to: database)
        #expect(try await database.read { try $0.query("SELECT COUNT(*) AS n FROM notes").first?.integer("n") } == 3)
        await database.close()
    }

    @Test func afterCloseCallsFailWithClosed() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        await database.close()
        await #expect(throws: StorageError(kind: .closed, message: "the database is closed")) {
            try await database.read { try $0.query("SELECT 1") }
        }
    }
}

@Suite struct MigratorTests {
    @Test func appliesInOrderOnceAndRecordsTheVersion() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        try await Migrator.migrate(database, [notesMigrations[0]])
        #expect(try await Migrator.version(of: "notes", in: database) == 1)
        try await Migrator.migrate(database, notesMigrations)
        try await Migrator.migrate(database, notesMigrations)  // again: nothing to do
        #expect(try await Migrator.version(of: "notes", in: database) == 2)
        let columns = try await database.read { try $0.query("PRAGMA table_info(notes)").compactMap { $0.text("name") } }
        #expect(columns == ["id", "text", "done"])
        await database.close()
    }

    @Test func refusesADatabaseFromANewerVersion() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        do {
            try await Migrator.migrate(database, [notesMigrations[0]])
            Issue.record("expected newerSchema")
        } catch let error as StorageError {
            #expect(error.kind == .newerSchema)
            #expect(error.message.contains("version 2"))
        }
        await database.close()
    }

    @Test func splitsStatementsOutsideQuotes() {
        #expect(
            Migrator.split("CREATE TABLE a (x TEXT DEFAULT ';'); INSERT INTO a VALUES ('a;b');\n") == [
                "CREATE TABLE a (x TEXT DEFAULT ';')", "INSERT INTO a VALUES ('a;b')",
            ])
    }
}

@Suite struct OutboxTests {
    @Test func eventsArePublishedAfterCommitWithTheirSequence() async throws {
        let bus = EventBus()
        let subscription = try bus.subscribe(NoteAdded.self)
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        let first = try await addNote("one", to: database)
        _ = try await addNote("two", to: database)
        var iterator = subscription.makeAsyncIterator()
        let a = try await iterator.next()
        let b = try await iterator.next()
        #expect(a?.event == NoteAdded(id: first, text: "one"))
        #expect(a?.metadata.sequence == 1)
        #expect(b?.metadata.sequence == 2)
        await database.close()
    }

    @Test func aRolledBackTransactionPublishesNothing() async throws {
        let bus = EventBus()
        let subscription = try bus.subscribe(">")
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        await #expect(throws: Boom.self) {
            try await database.write { transaction in
                try transaction.append(NoteAdded(id: 1, text: "never"), causedBy: nil)
                throw Boom()
            }
        }
        _ = try await addNote("real", to: database)
        var iterator = subscription.makeAsyncIterator()
        let event = try await iterator.next()
        #expect(event?.decode(as: NoteAdded.self)?.text == "real")
        let log = try await EventLog(database: database).events(after: 0, limit: 10)
        #expect(log.map(\.topic) == ["notes.added"])
        #expect(log.first?.sequence == event?.sequence)
        await database.close()
    }

    /// A batch runs without savepoints first: when a write in it throws after changing rows and
    /// logging its event, the batch is run again with one savepoint each, so exactly the others
    /// are committed, logged (with sequences that leave no gap) and published, in log order.
    @Test func writesThatThrowInABatchLeaveNoTraceAndTheOthersAreLoggedAndPublishedInOrder() async throws {
        let bus = EventBus()
        let subscription = try bus.subscribe(NoteAdded.self)
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        // The writer is held until every caller has been started, so the writes queue up and
        // are committed in batches that mix failing and succeeding writes.
        let total = 200
        let started = StartGate(callers: total)
        async let held: Bool = database.write { _ in started.waitForAll() }
        let kept = await withTaskGroup(of: String?.self) { group in
            for i in 0..<total {
                group.addTask {
                    started.arrive()
                    do {
                        _ = try await database.write { transaction in
                            let text = "note \(i)"
                            let id = try transaction.query("INSERT INTO notes (text) VALUES (?) RETURNING id", [.text(text)]).first?.integer("id") ?? 0
                            try transaction.append(NoteAdded(id: id, text: text), causedBy: nil)
                            if i % 7 == 3 { throw Boom() }  // after its row and its event
                        }
                        return "note \(i)"
                    } catch {
                        return nil
                    }
                }
            }
            var kept: Set<String> = []
            for await text in group { if let text { kept.insert(text) } }
            return kept
        }
        #expect(try await held, "every caller started within 30 s")
        #expect(kept.count == total - (0..<total).filter { $0 % 7 == 3 }.count)
        let rows = try await database.read { try $0.query("SELECT text FROM notes ORDER BY id").compactMap { $0.text("text") } }
        #expect(Set(rows) == kept)
        #expect(rows.count == kept.count)
        let log = try await EventLog(database: database).events(after: 0, limit: 1000)
        #expect(Set(log.compactMap { $0.decode(as: NoteAdded.self)?.text }) == kept)
        #expect(log.map(\.sequence) == (1...kept.count).map { Optional(Int64($0)) }, "a rolled-back write leaves no gap in the log")
        var published: [Int64] = []
        var iterator = subscription.makeAsyncIterator()
        while published.count < kept.count, let event = try await iterator.next() {
            #expect(kept.contains(event.event.text))
            published.append(event.metadata.sequence ?? 0)
        }
        #expect(published == (1...kept.count).map { Int64($0) }, "published once each, in log order")
        await database.close()
    }

    /// SQLite rolls a transaction back by itself after some errors (a full disk, an I/O error).
    /// The writes after that in the batch must not run outside it (each would commit on its own
    /// while its caller is told it failed): whatever batches form, a caller told "done" has its
    /// row and a caller told it failed has none.
    @Test func writesAfterSQLiteRolledTheTransactionBackAreNotCommittedOnTheirOwn() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        let total = 60
        let started = StartGate(callers: total)
        // The holding write may land in the batch that is rolled back: it fails with the others.
        async let held = try? database.write { _ in started.waitForAll() }
        let told = await withTaskGroup(of: (String, Bool).self) { group in
            for i in 0..<total {
                group.addTask {
                    started.arrive()
                    let text = "note \(i)"
                    do {
                        try await database.write { transaction in
                            _ = try transaction.execute("INSERT INTO notes (text) VALUES (?)", [.text(text)])
                            // What SQLite does after SQLITE_FULL or SQLITE_IOERR, at worst.
                            if i % 20 == 10 { _ = try transaction.execute("ROLLBACK", []) }
                        }
                        return (text, true)
                    } catch {
                        return (text, false)
                    }
                }
            }
            var told: [String: Bool] = [:]
            for await (text, done) in group { told[text] = done }
            return told
        }
        _ = await held
        #expect(started.allArrived, "every caller started within 30 s")
        let rows = try await database.read { try $0.query("SELECT text FROM notes").compactMap { $0.text("text") } }
        #expect(Set(rows) == Set(told.filter(\.value).keys), "a row exactly for each caller told it is done")
        #expect(told["note 10"] == false)
        await database.close()
    }

    /// The event log's encoding of an event is the one its subscribers get: a typed event is
    /// encoded once per write, not again for the bus.
    @Test func aLoggedEventIsEncodedOnceForTheLogAndTheBus() async throws {
        let bus = EventBus()
        let subscription = try bus.subscribe("notes.counted")
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        let before = CountedNote.encodings.load(ordering: .acquiring)
        try await database.write { transaction in _ = try transaction.appendLogged(CountedNote(text: "once"), causedBy: nil) }
        var iterator = subscription.makeAsyncIterator()
        let event = try await iterator.next()
        #expect(try event?.json() == ["text": "once"])
        #expect(event?.decode(as: CountedNote.self)?.text == "once", "subscribers in the process still get the typed value")
        let log = try await EventLog(database: database).events(after: 0, limit: 10)
        #expect(try log.first?.json() == ["text": "once"])
        #expect(CountedNote.encodings.load(ordering: .acquiring) - before == 1, "encoded once")
        await database.close()
    }

    @Test func groupCommitKeepsEveryAcknowledgedWriteAndItsEvent() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
            for i in 0..<500 { group.addTask { try await addNote("n\(i)", to: database) } }
            var ids: [Int64] = []
            for try await id in group { ids.append(id) }
            return ids
        }
        #expect(Set(ids).count == 500)
        let log = try await EventLog(database: database).events(after: 0, limit: 1000)
        #expect(log.count == 500)
        #expect(log.map(\.sequence) == (1...500).map { Optional(Int64($0)) })
        await database.close()
    }
}

/// Lets a write hold the writer until every caller of a test has started. The write may be run
/// again (its batch re-run with savepoints): it waits only the first time.
final class StartGate: Sendable {
    private let callers: Int
    private let arrivals = DispatchSemaphore(value: 0)
    private let opened = Atomic<Bool>(false)

    init(callers: Int) { self.callers = callers }

    func arrive() { arrivals.signal() }

    var allArrived: Bool { opened.load(ordering: .acquiring) }

    /// True once every caller arrived (false if one did not within 30 s).
    func waitForAll() -> Bool {
        if opened.load(ordering: .acquiring) { return true }
        let all = (0..<callers).allSatisfy { _ in arrivals.wait(timeout: .now() + 30) == .success }
        opened.store(all, ordering: .releasing)
        return all
    }
}

/// An event that counts how often it is encoded.
struct CountedNote: Event, Equatable {
    static let topic = "notes.counted"
    static let audience = EventAudience.admin
    static let encodings = Atomic<Int>(0)
    var text: String

    init(text: String) { self.text = text }
    init(from decoder: any Decoder) throws {
        text = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .text)
    }
    func encode(to encoder: any Encoder) throws {
        Self.encodings.add(1, ordering: .acquiringAndReleasing)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(text, forKey: .text)
    }
    enum Keys: String, CodingKey { case text }
}
