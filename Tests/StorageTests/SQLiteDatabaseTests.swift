import Bus
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
        #expect(Migrator.split("CREATE TABLE a (x TEXT DEFAULT ';'); INSERT INTO a VALUES ('a;b');\n") == [
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
