// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Synchronization
import Testing
import TestSupport
import EventDelivery
@testable import Storage

/// Collects what a consumer handled.
final class Seen: Sendable {
    private let items = Mutex<[Int64]>([])
    func add(_ seq: Int64) { items.withLock { $0.append(seq) } }
    var all: [Int64] { items.withLock { $0 } }
}

@Suite struct SubscribeSinceTests {
    func setUp() throws -> (String, EventBus, SQLiteDatabase, VarlinkDispatcher) {
        let dir = temporaryDirectory()
        let bus = EventBus()
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: .relaying(to: bus))
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "0", url: "u"))
        try BusInterface.install(on: dispatcher, events: bus, replay: EventLog(database: database), isAdmin: { _ in true })
        return (dir, bus, database, dispatcher)
    }

    /// Runs Subscribe(since:) through the dispatcher until `count` events arrived.
    func collect(_ dispatcher: VarlinkDispatcher, since: Int64?, topics: [String] = [">"], count: Int) async throws -> [JSONValue] {
        let received = Mutex<[JSONValue]>([])
        let task = Task {
            var parameters: [String: JSONValue] = ["topics": .array(topics.map(JSONValue.string))]
            if let since { parameters["since"] = .int(since) }
            try await dispatcher.handle(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: .object(parameters), more: true), as: .daemon) { reply in
                received.withLock { $0.append(reply.parameters) }
                if received.withLock({ $0.count }) >= count { throw CancellationError() }
            }
        }
        _ = await task.result
        return received.withLock { $0 }
    }

    @Test func replaysThenContinuesLiveWithoutGapOrRepeat() async throws {
        let (dir, _, database, dispatcher) = try setUp()
        defer { removeDirectory(dir) }
        try await Migrator.migrate(database, notesMigrations)
        for i in 0..<5 { _ = try await addNote("before \(i)", to: database) }
        let writer = Task {
            // Writes land before, during or after the replay: each order must give no gap and no repeat.
            try await Task.sleep(for: .milliseconds(50))
            for i in 0..<5 { _ = try await addNote("after \(i)", to: database) }
        }
        let events = try await collect(dispatcher, since: 2, count: 8)
        try await writer.value
        #expect(events.map { $0["seq"] } == (3...10).map { JSONValue.int(Int64($0)) })
        #expect(events.first?["payload"]?["text"] == "before 2")
        await database.close()
    }

    @Test func noGapNoRepeatUnderConcurrentWrites() async throws {
        let (dir, _, database, dispatcher) = try setUp()
        defer { removeDirectory(dir) }
        try await Migrator.migrate(database, notesMigrations)
        for i in 0..<50 { _ = try await addNote("early \(i)", to: database) }
        let writers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<200 { group.addTask { _ = try await addNote("concurrent \(i)", to: database) } }
                try await group.waitForAll()
            }
        }
        let events = try await collect(dispatcher, since: 0, count: 250)
        try await writers.value
        #expect(events.compactMap { if case .int(let s)? = $0["seq"] { s } else { nil } } == (1...250).map { Int64($0) })
        await database.close()
    }

    @Test func aSlowSubscriberWithSinceGetsWhatItsBufferDroppedFromTheLog() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let bus = EventBus()
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: .relaying(to: bus))
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "0", url: "u"))
        // A tiny live buffer that drops its oldest events when the subscriber falls behind.
        try BusInterface.install(
            on: dispatcher, events: bus, options: SubscriptionOptions(capacity: 4, overflow: .dropOldest), replay: EventLog(database: database), isAdmin: { _ in true })
        try await Migrator.migrate(database, notesMigrations)
        let received = Mutex<[JSONValue]>([])
        let task = Task {
            try await dispatcher.handle(
                VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": [">"], "since": 0], more: true), as: .daemon
            ) { reply in
                received.withLock { $0.append(reply.parameters) }
                try await Task.sleep(for: .milliseconds(2))  // a slow reader
                if received.withLock({ $0.count }) >= 120 { throw CancellationError() }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<120 { group.addTask { _ = try await addNote("burst \(i)", to: database) } }
            try await group.waitForAll()
        }
        // Bounded: a regression shows as missing events, not as a hang. The bound is generous:
        // a slow reader on a loaded CI machine (the whole suite in parallel) takes seconds.
        _ = await eventually(timeout: .seconds(60)) { received.withLock { $0.count } >= 120 }
        task.cancel()
        _ = await task.result
        let events = received.withLock { $0 }
        #expect(events.compactMap { if case .int(let s)? = $0["seq"] { s } else { nil } } == (1...120).map { Int64($0) })
        #expect(events.allSatisfy { $0["dropped"] == .int(0) })
        await database.close()
    }

    @Test func sinceWithoutAnEventLogIsAnInvalidParameter() async throws {
        let bus = EventBus()
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "0", url: "u"))
        try BusInterface.install(on: dispatcher, events: bus, isAdmin: { _ in true })
        var reply: VarlinkReply?
        try await dispatcher.handle(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": [">"], "since": 0], more: true), as: .daemon) { reply = $0 }
        #expect(reply?.error == "org.varlink.service.InvalidParameter")
        #expect(reply?.parameters == ["parameter": "since"])
    }
}

@Suite struct DurableConsumerTests {
    @Test func catchesUpOnEverythingPublishedWhileItWasStopped() async throws {
        let bus = EventBus()
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        let log = EventLog(database: database)
        let seen = Seen()
        func consumer() -> DurableConsumer {
            DurableConsumer(name: "counter", filter: try! TopicFilter("notes.*"), log: log, bus: bus) { event in  // safe: a valid literal pattern
                seen.add(event.sequence ?? -1)
            }
        }
        for i in 0..<10 { _ = try await addNote("a\(i)", to: database) }
        var running = Task { try await consumer().run() }
        #expect(await eventually { seen.all.count == 10 })
        for i in 0..<5 { _ = try await addNote("live\(i)", to: database) }
        #expect(await eventually { seen.all.count == 15 })
        running.cancel()
        _ = await running.result

        // Stopped: these must be processed when it comes back, and nothing twice.
        for i in 0..<7 { _ = try await addNote("b\(i)", to: database) }
        #expect(try await DurableConsumer.position(of: "counter", in: database) == 15)
        running = Task { try await consumer().run() }
        #expect(await eventually { seen.all.count == 22 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.all == Array(1...22))
        running.cancel()
        _ = await running.result
        await database.close()
    }

    @Test func aFailingHandlerIsRetriedAndNothingIsSkipped() async throws {
        let bus = EventBus()
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        let seen = Seen()
        let failures = Mutex(0)
        let consumer = DurableConsumer(
            name: "flaky", filter: TopicFilter.all, log: EventLog(database: database), bus: bus,
            logger: Logger(label: "t", handler: InMemoryLogHandler())
        ) { event in
            if event.sequence == 2
                && failures.withLock({
                    $0 += 1; return $0
                }) <= 2
            {
                throw Boom()
            }
            seen.add(event.sequence ?? -1)
        }
        for i in 0..<3 { _ = try await addNote("n\(i)", to: database) }
        let running = Task { try await consumer.run() }
        #expect(await eventually { seen.all.count == 3 })
        #expect(seen.all == [1, 2, 3])
        #expect(failures.withLock { $0 } == 3)
        running.cancel()
        _ = await running.result
        await database.close()
    }

    /// Live events that wait while the handler works are taken as one batch, and the position is
    /// saved once for the batch, not once per event (a trigger counts the saves).
    @Test func aBurstOfLiveEventsSavesThePositionOncePerBatch() async throws {
        let bus = EventBus()
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        try await database.write { tx in
            try tx.execute("CREATE TABLE saves (seq INTEGER NOT NULL)")
            try tx.execute("CREATE TRIGGER saved_insert AFTER INSERT ON appd_consumers BEGIN INSERT INTO saves VALUES (new.seq); END")
            try tx.execute("CREATE TRIGGER saved_update AFTER UPDATE ON appd_consumers BEGIN INSERT INTO saves VALUES (new.seq); END")
        }
        let seen = Seen()
        let released = Mutex(false)
        let consumer = DurableConsumer(name: "batched", filter: TopicFilter.all, log: EventLog(database: database), bus: bus) { event in
            // The first event holds the handler until the burst is in: the rest wait in the queue.
            while event.sequence == 1 && !released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
            seen.add(event.sequence ?? -1)
        }
        let running = Task { try await consumer.run() }
        // Live from the start: its catch-up saw an empty log.
        #expect(await eventually { bus.counters.subscriptions > 0 })
        _ = try await addNote("first", to: database)
        for i in 0..<40 { _ = try await addNote("n\(i)", to: database) }
        released.withLock { $0 = true }
        #expect(await eventually { seen.all.count == 41 })
        #expect(await eventually { (try? await DurableConsumer.position(of: "batched", in: database)) == 41 })
        #expect(seen.all == Array(1...41))
        let saves = try await database.read { tx in try tx.query("SELECT seq FROM saves ORDER BY rowid").compactMap { $0.integer("seq") } }
        #expect(saves.last == 41)
        #expect(saves.count <= 3, "one save for the first event, one for the batch behind it: \(saves)")
        running.cancel()
        _ = await running.result
        await database.close()
    }

    @Test func aSlowConsumerThatOverflowsGoesBackToTheLog() async throws {
        let bus = EventBus()
        let (dir, database) = try await notesDatabase(bus: bus)
        defer { removeDirectory(dir) }
        let seen = Seen()
        let consumer = DurableConsumer(
            name: "slow", filter: TopicFilter.all, log: EventLog(database: database), bus: bus, liveCapacity: 4,
            logger: Logger(label: "t", handler: InMemoryLogHandler())
        ) { event in
            try await Task.sleep(for: .milliseconds(2))
            seen.add(event.sequence ?? -1)
        }
        let running = Task { try await consumer.run() }
        try await Task.sleep(for: .milliseconds(20))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<100 { group.addTask { _ = try await addNote("n\(i)", to: database) } }
            try await group.waitForAll()
        }
        // Each event it handles is a committed write of its position: seconds on a loaded machine.
        #expect(await eventually(timeout: .seconds(60)) { seen.all.count >= 100 })
        #expect(seen.all == Array(1...100))
        running.cancel()
        _ = await running.result
        await database.close()
    }
}

@Suite struct ErasureTests {
    @Test func anErasureCoversTheEventsAppendedBeforeItInTheSameTransaction() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        let logged = try await eraseBetweenAppends(database)
        #expect(logged["after"] == false && logged["other user"] == false && logged.count == 3, "\(logged)")
        #expect(logged.keys.contains { $0.hasPrefix("redacted:") }, "\(logged)")
        await database.close()
    }

    /// An owner erased before the database was closed is still erased when it opens again: an
    /// event about them is logged as a tombstone, one about anyone else as it is (the writer
    /// skips the erased-owner look-up only while no owner was ever erased).
    @Test func anOwnerErasedBeforeARestartStaysErased() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        try await database.write { tx in try tx.append(NoteAbout(userId: "u2", text: "kept before"), causedBy: nil) }
        try await database.write { tx in try tx.redactEvents(about: "u1") }
        await database.close()
        let reopened = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        try await reopened.write { tx in
            try tx.append(NoteAbout(userId: "u1", text: "after the restart"), causedBy: nil)
            try tx.append(NoteAbout(userId: "u2", text: "kept after"), causedBy: nil)
        }
        let rows = try await reopened.read { tx in try tx.query("SELECT owner, redacted, payload FROM appd_events WHERE topic = 'notes.about' ORDER BY seq") }
        let seen = rows.map { "\($0.text("owner") ?? "?"):\($0.integer("redacted") == 1 ? "redacted" : $0.text("payload") ?? "?")" }
        #expect(
            seen == [#"u2:{"text":"kept before","userId":"u2"}"#, "u1:redacted", #"u2:{"text":"kept after","userId":"u2"}"#], "\(seen)")
        await reopened.close()
    }

    /// A database where nobody was erased logs events with their payloads, and the first
    /// erasure on it covers what follows at once (the look-up the writer skipped until then).
    @Test func theFirstErasureOfADatabaseCoversTheEventsThatFollow() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        try await database.write { tx in try tx.append(NoteAbout(userId: "u1", text: "before"), causedBy: nil) }
        try await database.write { tx in try tx.redactEvents(about: "u1") }
        try await database.write { tx in try tx.append(NoteAbout(userId: "u1", text: "after"), causedBy: nil) }
        let rows = try await database.read { tx in try tx.query("SELECT redacted FROM appd_events WHERE owner = 'u1' ORDER BY seq") }
        #expect(rows.map { $0.integer("redacted") } == [1, 1])
        await database.close()
    }

    /// An event about an erased owner logged after the erasure (a consumer still catching up)
    /// is a tombstone too; only the erasing write's own notice keeps its payload.
    @Test func eventsAboutAnErasedOwnerAreLoggedRedactedWhoeverLogsThem() async throws {
        let (dir, database) = try await notesDatabase(bus: nil)
        defer { removeDirectory(dir) }
        let (readable, total) = try await eraseWhileOthersLog(erasing: database, appending: [database])
        #expect(readable == ["the notice"] && total == 4 * 20 + 2, "\(readable), \(total) logged")
        await database.close()
    }
}

@Suite struct EventLogUpgradeTests {
    /// A database written by appd before events had ids, versions and owners.
    func oldDatabase() throws -> String {
        let dir = temporaryDirectory()
        let old = try SQLiteConnection(path: dir + "/appd.db", busyTimeoutMilliseconds: 1000)
        try old.executeScript(
            """
            CREATE TABLE appd_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, time_ns INTEGER NOT NULL,
              payload TEXT NOT NULL, correlation TEXT, causation TEXT);
            CREATE TABLE appd_consumers (name TEXT PRIMARY KEY, seq INTEGER NOT NULL);
            INSERT INTO appd_events (topic, time_ns, payload) VALUES ('rating.promptSuggested', 1, '{"userId":"u_ada"}');
            INSERT INTO appd_events (topic, time_ns, payload) VALUES ('todos.created', 2, '{"todoId":"t_1","userId":"u_bob","title":"milk"}');
            INSERT INTO appd_events (topic, time_ns, payload) VALUES ('demo.hello', 3, '{"n":1}');
            """)
        return dir
    }

    @Test func rowsInTheOldShapeDecodeGetOwnersAndCanBeRedacted() async throws {
        let dir = try oldDatabase()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        let log = EventLog(database: database)
        let events = try await log.events(after: 0, limit: 10)
        #expect(events.map(\.owner) == ["u_ada", "u_bob", nil])
        #expect(events.map(\.version) == [1, 1, 1])
        // Version 1 of rating.promptSuggested had no reason: brought forward, it decodes.
        #expect(events[0].decode(as: RatingPromptSuggested.self) == RatingPromptSuggested(userId: "u_ada", reason: "unknown"))
        #expect(events[1].decode(as: TodoCreated.self) == TodoCreated(todoId: "t_1", userId: "u_bob", title: "milk"))
        // Ids are stable across reads, and an old event is its own correlation.
        #expect(try await log.events(after: 0, limit: 1).first?.id == events[0].id)
        #expect(events[0].correlationID == events[0].id && events[0].causationID == nil)

        let appended = try await database.write { tx in
            try tx.append(RatingPromptSuggested(userId: "u_ada", reason: "allRulesPassed"), causedBy: events[1])
            return try tx.redactEvents(about: "u_bob")
        }
        #expect(appended == 1)
        let after = try await log.events(after: 0, limit: 10)
        #expect(after[1].redacted && after[1].decode(as: TodoCreated.self) == nil)
        #expect(try after[1].json() == [:])
        #expect(after[3].version == 2 && after[3].causationID == events[1].id && after[3].correlationID == events[1].correlationID)
        #expect(after[3].decode(as: RatingPromptSuggested.self)?.reason == "allRulesPassed")
        await database.close()
    }

    func hello(_ n: Int) -> BusEvent { BusEvent(topic: "demo.hello", payload: .json(["n": .int(Int64(n))])) }

    /// The table `CREATE` statement of `name` in the file at `path`.
    func tableSQL(_ path: String, _ name: String = "appd_events") throws -> String {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 1000)
        return try connection.run("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)]).first?.text("sql") ?? ""
    }

    /// A log made with `AUTOINCREMENT` is rebuilt without it (no `sqlite_sequence` written by
    /// each event), its rows and positions unchanged, and continues after its newest.
    @Test func anAutoincrementLogIsRebuiltAndContinuesAfterItsNewest() async throws {
        let dir = try oldDatabase()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        let log = EventLog(database: database)
        #expect(try await log.events(after: 0, limit: 10).map(\.sequence) == [1, 2, 3])
        #expect(try await log.events(about: "u_bob", after: 0, limit: 10).map(\.sequence) == [2], "the owner index is there again")
        #expect(try await log.append(hello(2)) == 4)
        await database.close()
        let made = try tableSQL(dir + "/appd.db")
        #expect(made.contains("seq INTEGER PRIMARY KEY") && !made.uppercased().contains("AUTOINCREMENT"), "\(made)")
        let sequences = try SQLiteConnection(path: dir + "/appd.db", busyTimeoutMilliseconds: 1000).run(
            "SELECT COUNT(*) AS n FROM sqlite_sequence WHERE name = 'appd_events'", [])
        #expect(sequences.first?.integer("n") == 0)
    }

    /// A log whose newest events were deleted (as `prune` did before it kept the newest) has
    /// handed out positions above its newest row: rebuilt, it would hand them out again and a
    /// consumer past them would skip the new events. It keeps `AUTOINCREMENT` until it logs an
    /// event again, and is rebuilt at the start after.
    @Test func aLogWhoseNewestWasPrunedIsRebuiltOnlyOnceItLogsAgain() async throws {
        let dir = try oldDatabase()
        defer { removeDirectory(dir) }
        try SQLiteConnection(path: dir + "/appd.db", busyTimeoutMilliseconds: 1000).executeScript("DELETE FROM appd_events WHERE seq >= 2")
        var database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        #expect(try await EventLog(database: database).append(hello(2)) == 4)
        await database.close()
        #expect(try tableSQL(dir + "/appd.db").uppercased().contains("AUTOINCREMENT"))
        database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        #expect(try await EventLog(database: database).append(hello(3)) == 5)
        #expect(try await EventLog(database: database).events(after: 0, limit: 10).map(\.sequence) == [1, 4, 5])
        await database.close()
        #expect(!(try tableSQL(dir + "/appd.db").uppercased().contains("AUTOINCREMENT")))
    }

    /// Pruning keeps the newest event whatever its age or the count asked for: the next
    /// position continues after it, so no position is handed out twice.
    @Test func pruningKeepsTheNewestSoPositionsAreNeverReused() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        let log = EventLog(database: database)
        for n in 1...3 { _ = try await log.append(hello(n)) }
        #expect(try await log.prune(maxAge: .zero, maxCount: nil) == 2)
        #expect(try await log.events(after: 0, limit: 10).map(\.sequence) == [3])
        #expect(try await log.prune(maxAge: nil, maxCount: 0) == 0)
        #expect(try await log.append(hello(4)) == 4)
        #expect(try await log.prune(maxAge: nil, maxCount: 1) == 1)
        #expect(try await log.append(hello(5)) == 5)
        await database.close()
    }

    @Test func upgradingTwiceChangesNothing() async throws {
        let dir = try oldDatabase()
        defer { removeDirectory(dir) }
        for _ in 0..<2 {
            let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
            #expect(try await EventLog(database: database).events(after: 0, limit: 10).map(\.owner) == ["u_ada", "u_bob", nil])
            await database.close()
        }
    }
}
