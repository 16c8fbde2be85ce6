// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Foundation
import Testing
import TestSupport

/// OfflineTodos against the real appd over HTTP: writes queued while appd is down are applied
/// exactly once each — across a kill -9 of appd in the middle of the replay, and across the
/// app dying between appd applying a write and the app recording it; two devices' offline
/// edits of one todo end in a conflict the app resolves; the feed hands over to the live
/// stream with nothing missed or applied twice.
@Suite(.serialized, .timeLimit(.minutes(3))) struct OfflineTodosEndToEndTests {
    static func client(_ port: UInt16, tokens: any TokenStore = InMemoryTokenStore()) -> AppdClient {
        AppdClient(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, tokenStore: tokens,
            retry: RetryPolicy(retries: 1, initialDelay: .milliseconds(20), maxDelay: .milliseconds(50)))
    }

    static func signUp(_ appd: AppdClient, _ email: String) async throws {
        _ = try await appd.call(AuthInterface.SignUp(email: email, password: "correct horse battery"))
        _ = try await appd.call(AuthInterface.CompleteOnboarding())
    }

    /// Every todo of the account with its version, read from appd.
    static func serverTodos(_ appd: AppdClient) async throws -> [Todo] {
        var todos: [Todo] = []
        var cursor: String?
        repeat {
            let page = try await appd.call(TodosInterface.List(cursor: cursor, limit: 500))
            todos += page.todos
            cursor = page.nextCursor
        } while cursor != nil
        return todos
    }

    /// 50 writes queued offline: 20 adds, 20 edits (each of the first 20 todos retitled), 10
    /// deletes of the last 10 added. Returns what appd must end with: title and version by id.
    static func queueFifty(_ offline: OfflineTodos) async throws -> [String: (title: String, version: Int64)] {
        var ids: [String] = []
        for n in 0..<20 { ids.append(try await offline.add(title: "todo \(n)").id) }
        for (n, id) in ids.enumerated() { try await offline.update(id: id, TodoEdit(title: "todo \(n) edited")) }
        for id in ids.suffix(10) { try await offline.delete(id: id) }
        var expected: [String: (title: String, version: Int64)] = [:]
        for (n, id) in ids.prefix(10).enumerated() { expected[id] = ("todo \(n) edited", 2) }
        return expected
    }

    static func check(_ appd: AppdClient, _ expected: [String: (title: String, version: Int64)], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let todos = try await serverTodos(appd)
        #expect(todos.count == expected.count, "\(todos.map(\.title))", sourceLocation: sourceLocation)
        for todo in todos {
            #expect(expected[todo.id]?.title == todo.title && expected[todo.id]?.version == todo.version, "\(todo)", sourceLocation: sourceLocation)
        }
        // Each add logged one todos.created: none was applied twice.
        let created = try await appd.call(TodosInterface.Changes(limit: 500))
        #expect(created.changes.filter { !$0.deleted }.count == expected.count, sourceLocation: sourceLocation)
    }

    @Test func fiftyWritesQueuedWhileAppdIsDownLandOnceEachAcrossAKillDuringTheReplay() async throws {
        let port = try freeTCPPort()
        let flags = ["--http-listen", "127.0.0.1:\(port)"]
        var daemon = try await Daemon.start(flags)
        let appd = Self.client(port)
        try await Self.signUp(appd, "ada@example.com")
        let offline = OfflineTodos(service: appd.todos, store: InMemoryOfflineTodosStore())
        try await offline.sync()
        #expect(await daemon.stop() == 0)
        daemon.keepDirectory = true

        let expected = try await Self.queueFifty(offline)
        await #expect(throws: (any Error).self) { try await offline.sync() }
        #expect(try await offline.snapshot().pending.count == 50, "appd is down: everything stays queued")

        // appd comes back; it is killed (-9) once part of the queue is through.
        daemon = try await Daemon.start(flags, directory: daemon.directory)
        var snapshots = try await offline.snapshots().makeAsyncIterator()
        let replay = Task { try await offline.sync() }
        while let snapshot = await snapshots.next(), snapshot.pending.count > 30 {}
        #expect(await daemon.stop(signal: SIGKILL) == SIGKILL)
        daemon.keepDirectory = true
        await #expect(throws: (any Error).self) { try await replay.value }
        let left = try await offline.snapshot().pending.count
        #expect(left > 0 && left <= 30, "the kill came in the middle of the replay (\(left) left)")

        daemon = try await Daemon.start(flags, directory: daemon.directory)
        let report = try await offline.sync()
        #expect(report.conflicts == 0 && report.rejected == 0, "\(report)")
        #expect(try await offline.snapshot().pending.isEmpty)
        try await Self.check(appd, expected)
        #expect(Set(try await offline.todos().map(\.id)) == Set(expected.keys), "the copy is appd's")
        #expect(await daemon.stop() == 0)
    }

    /// The app dies after appd applied a write and before the app recorded it (the reply is
    /// lost with the process): the next run of the app, reading the same files, sends it again
    /// with its key — once.
    @Test func theAppRestartedMidQueueSendsEachWriteOnce() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let folder = daemon.directory + "/app"
        let tokens = FileTokenStore(path: folder + "/session.json")
        let appd = Self.client(port, tokens: tokens)
        try await Self.signUp(appd, "bo@example.com")
        let first = OfflineTodos(service: Dying(appd.todos, after: 23), store: FileOfflineTodosStore(path: folder + "/todos.json"))
        let expected = try await Self.queueFifty(first)
        await #expect(throws: Dying.Died.self) { try await first.sync() }
        #expect(try await first.snapshot().pending.count == 27, "the 24th write reached appd, its reply did not reach the store")

        // The app's next launch: new objects over the same files.
        let relaunched = Self.client(port, tokens: FileTokenStore(path: folder + "/session.json"))
        let second = OfflineTodos(service: relaunched.todos, store: FileOfflineTodosStore(path: folder + "/todos.json"))
        #expect(try await second.snapshot().pending.count == 27)
        let report = try await second.sync()
        #expect(report.sent == 27 && report.conflicts == 0 && report.rejected == 0, "\(report)")
        try await Self.check(relaunched, expected)
        #expect(await daemon.stop() == 0)
    }

    @Test func twoDevicesEditingOneTodoOfflineEndInAConflictTheAppResolves() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let phoneClient = Self.client(port), tabletClient = Self.client(port)
        try await Self.signUp(phoneClient, "cy@example.com")
        _ = try await tabletClient.call(AuthInterface.SignIn(email: "cy@example.com", password: "correct horse battery"))
        let phone = OfflineTodos(service: phoneClient.todos, store: InMemoryOfflineTodosStore())
        let tablet = OfflineTodos(service: tabletClient.todos, store: InMemoryOfflineTodosStore())
        let todo = try await phone.add(title: "plan the trip")
        try await phone.sync()
        try await tablet.sync()
        #expect(try await tablet.todos().map(\.id) == [todo.id], "the id the phone made is the id everywhere")

        // Both offline (nothing sent), both edit; the tablet comes back first.
        try await phone.update(id: todo.id, TodoEdit(title: "plan the trip (phone)", notes: "ferry at 9"))
        try await tablet.update(id: todo.id, TodoEdit(title: "plan the trip (tablet)"))
        try await tablet.sync()
        let report = try await phone.sync()
        #expect(report.conflicts == 1)
        let conflict = try #require(try await phone.snapshot().conflicts.first)
        #expect(conflict.server.title == "plan the trip (tablet)" && conflict.server.version == 2)
        #expect(conflict.mine?.title == "plan the trip (phone)" && conflict.mine?.notes == "ferry at 9")

        // The app merges: the tablet's title, the phone's notes.
        var merged = conflict.server
        merged.notes = conflict.mine?.notes
        try await phone.resolve(todo.id, .merged(merged))
        try await phone.sync()
        let onServer = try await phoneClient.call(TodosInterface.Get(id: todo.id)).todo
        #expect(onServer.title == "plan the trip (tablet)" && onServer.notes == "ferry at 9" && onServer.version == 3)
        try await tablet.sync()
        let tabletTodos = try await tablet.todos(), phoneTodos = try await phone.todos()
        #expect(tabletTodos == [onServer] && phoneTodos == [onServer])
        #expect(await daemon.stop() == 0)
    }

    /// `run()`: the feed, then the live stream from where it ended. A todo added elsewhere
    /// before and one while it runs are each applied once; an edit made here is sent.
    @Test func theFeedHandsOverToTheLiveStreamWithNothingMissedOrRepeated() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let phoneClient = Self.client(port), webClient = Self.client(port)
        try await Self.signUp(phoneClient, "di@example.com")
        _ = try await webClient.call(AuthInterface.SignIn(email: "di@example.com", password: "correct horse battery"))
        let phone = OfflineTodos(service: phoneClient.todos, store: InMemoryOfflineTodosStore())
        try await phone.sync()
        let before = try await webClient.call(TodosInterface.Add(title: "after the last pull")).todo

        var snapshots = try await phone.snapshots().makeAsyncIterator()
        let running = Task { await phone.run() }
        defer { running.cancel() }
        var seen: [String: Int] = [:]
        func until(_ done: ([Todo]) -> Bool) async {
            while let snapshot = await snapshots.next() {
                for change in snapshot.pulled { seen[change.id, default: 0] += 1 }
                if done(snapshot.todos) { return }
            }
        }
        await until { $0.map(\.id) == [before.id] }
        let live = try await webClient.call(TodosInterface.Add(title: "while running")).todo
        await until { $0.map(\.id).contains(live.id) }
        #expect(seen == [before.id: 1, live.id: 1], "\(seen)")

        try await phone.complete(id: live.id)
        await until { todos in todos.first { $0.id == live.id }?.version == 2 }
        #expect(try await webClient.call(TodosInterface.Get(id: live.id)).todo.done)
        running.cancel()
        #expect(await daemon.stop() == 0)
    }
}

extension OfflineTodosEndToEndTests {
    /// Conversations offline against appd: made and renamed while appd is down, sent once
    /// each when it is back (the ids the app made are appd's), and a rename made elsewhere
    /// meanwhile is a conflict the app resolves.
    @Test func conversationsMadeOfflineLandOnceAndConflictsAreHeld() async throws {
        let port = try freeTCPPort()
        let flags = ["--http-listen", "127.0.0.1:\(port)"]
        let daemon = try await Daemon.start(flags)
        let phoneClient = Self.client(port), webClient = Self.client(port)
        try await Self.signUp(phoneClient, "fay@example.com")
        _ = try await webClient.call(AuthInterface.SignIn(email: "fay@example.com", password: "correct horse battery"))
        let phone = OfflineConversations(service: phoneClient.chat, store: InMemoryOfflineConversationsStore())
        try await phone.sync()
        #expect(await daemon.stop() == 0)
        daemon.keepDirectory = true

        let trip = try await phone.create(title: "trip")
        try await phone.rename(id: trip.id, title: "trip to Lisbon")
        let scratch = try await phone.create(title: "scratch")
        try await phone.delete(id: scratch.id)
        await #expect(throws: (any Error).self) { try await phone.sync() }
        let restarted = try await Daemon.start(flags, directory: daemon.directory)
        let report = try await phone.sync()
        #expect(report.sent == 4 && report.conflicts == 0 && report.rejected == 0, "\(report)")
        let listed = try await webClient.call(ChatInterface.ListConversations()).conversations
        #expect(listed.map(\.id) == [trip.id] && listed.first?.title == "trip to Lisbon" && listed.first?.version == 2, "\(listed)")

        _ = try await webClient.call(ChatInterface.RenameConversation(id: trip.id, title: "Lisbon (web)"))
        try await phone.rename(id: trip.id, title: "Lisbon (phone)")
        #expect(try await phone.sync().conflicts == 1)
        let conflict = try #require(try await phone.snapshot().conflicts.first)
        #expect(conflict.server.title == "Lisbon (web)" && conflict.mine?.title == "Lisbon (phone)")
        try await phone.resolve(trip.id, .keepMine)
        try await phone.sync()
        let now = try await webClient.call(ChatInterface.ListConversations()).conversations
        #expect(now.first?.title == "Lisbon (phone)" && now.first?.version == 4)
        #expect(try await phone.conversations() == now)
        #expect(await restarted.stop() == 0)
    }
}

/// A todos service whose process dies after `after` writes: the next write reaches appd, then
/// the reply is lost with the process and every later call fails.
actor Dying: TodosServing {
    struct Died: Error {}
    let service: any TodosServing
    private var left: Int
    private var dead = false

    init(_ service: any TodosServing, after writes: Int) {
        self.service = service
        self.left = writes
    }

    private func write<T: Sendable>(_ call: () async throws -> T) async throws -> T {
        guard !dead else { throw Died() }
        if left == 0 {
            dead = true
            _ = try await call()
            throw Died()
        }
        left -= 1
        return try await call()
    }

    func add(title: String, notes: String?, due: Date?, id: String?, idempotencyKey: String?) async throws -> Todo {
        try await write { try await service.add(title: title, notes: notes, due: due, id: id, idempotencyKey: idempotencyKey) }
    }
    func get(id: String) async throws -> Todo { try await service.get(id: id) }
    func list(_ filter: TodoFilter, cursor: String?, limit: Int?) async throws -> TodosInterface.TodoPage {
        try await service.list(filter, cursor: cursor, limit: limit)
    }
    func update(id: String, _ edit: TodoEdit, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await write { try await service.update(id: id, edit, expectedVersion: expectedVersion, idempotencyKey: idempotencyKey) }
    }
    func complete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await write { try await service.complete(id: id, expectedVersion: expectedVersion, idempotencyKey: idempotencyKey) }
    }
    func reopen(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await write { try await service.reopen(id: id, expectedVersion: expectedVersion, idempotencyKey: idempotencyKey) }
    }
    func delete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws {
        try await write { try await service.delete(id: id, expectedVersion: expectedVersion, idempotencyKey: idempotencyKey) }
    }
    func clearCompleted() async throws -> Int { try await service.clearCompleted() }
    func changes(after cursor: Int64?, limit: Int?) async throws -> TodosInterface.ChangePage {
        guard !dead else { throw Died() }
        return try await service.changes(after: cursor, limit: limit)
    }
    nonisolated func changeSignals(after cursor: Int64) -> AsyncThrowingStream<Int64, any Error> { service.changeSignals(after: cursor) }
}
