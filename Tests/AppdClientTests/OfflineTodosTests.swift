// SPDX-License-Identifier: Apache-2.0
import AppdClientTesting
import Contracts
import Foundation
import Testing
@testable import AppdClient

/// OfflineTodos' rules over the in-memory server (the same rules hold against appd:
/// EndToEndTests/OfflineTodosEndToEndTests): edits work offline, are sent once each in order,
/// a conflict is held with both versions until resolved, a refusal is kept with its reason.
@Suite struct OfflineTodosTests {
    @Test func editsMadeOfflineAreSentOnceEachInOrderAndChainTheirVersions() async throws {
        let server = InMemoryTodos()
        let store = InMemoryOfflineTodosStore()
        let phone = OfflineTodos(service: server, store: store)
        await server.setReachable(false)

        let milk = try await phone.add(title: "buy milk")
        #expect(milk.id.hasPrefix("t_") && milk.version == 0)
        try await phone.update(id: milk.id, TodoEdit(title: "buy oat milk", notes: "2 litres"))
        try await phone.complete(id: milk.id)
        let bread = try await phone.add(title: "bread")
        try await phone.delete(id: bread.id)
        #expect(try await phone.todos().map(\.title) == ["buy oat milk"])
        #expect(try await phone.todos().first?.done == true)
        await #expect(throws: AppdClientError.self) { try await phone.sync() }
        #expect(try await phone.snapshot().pending.count == 5, "nothing is lost while offline")

        await server.setReachable(true)
        let report = try await phone.sync()
        #expect(report.sent == 5 && report.conflicts == 0 && report.rejected == 0, "\(report)")
        // The second and third edits were based on the first: their versions were chained.
        let onServer = try await server.get(id: milk.id)
        #expect(onServer.title == "buy oat milk" && onServer.notes == "2 litres" && onServer.done && onServer.version == 3)
        await #expect(throws: TodosError.notFound) { _ = try await server.get(id: bread.id) }
        let calls = await server.calls.filter { $0 != "changes" && $0 != "get" }
        #expect(calls == ["add", "update", "complete", "add", "delete"], "\(calls)")
        #expect(try await phone.todos() == [onServer], "the copy is appd's")
        #expect(try await phone.snapshot().pending.isEmpty)
    }

    /// A restart of the app between a write reaching appd and the app hearing of it: the store
    /// still holds the write, which is sent again with its key and has its effect once.
    @Test func aWriteResentAfterARestartHasItsEffectOnce() async throws {
        let server = InMemoryTodos()
        let store = InMemoryOfflineTodosStore()
        let before = OfflineTodos(service: server, store: store)
        let todo = try await before.add(title: "once")
        let queued = try #require(try await before.snapshot().pending.first)
        // appd took it, the reply was lost.
        _ = try await server.add(title: "once", notes: nil, due: nil, id: todo.id, idempotencyKey: queued.key)

        let after = OfflineTodos(service: server, store: store)
        #expect(try await after.snapshot().pending == [queued], "the queue survived the restart")
        try await after.sync()
        #expect(try await server.list().todos.map(\.id) == [todo.id])
        #expect(try await after.todos().map(\.version) == [1])
    }

    @Test func aConflictKeepsBothVersionsUntilTheAppChooses() async throws {
        let server = InMemoryTodos()
        let phone = OfflineTodos(service: server, store: InMemoryOfflineTodosStore())
        let tablet = OfflineTodos(service: server, store: InMemoryOfflineTodosStore())
        let todo = try await phone.add(title: "plan the trip")
        try await phone.sync()
        try await tablet.sync()

        try await phone.update(id: todo.id, TodoEdit(title: "plan the trip (phone)"))
        try await tablet.update(id: todo.id, TodoEdit(title: "plan the trip (tablet)"))
        try await phone.complete(id: todo.id)
        try await tablet.sync()
        let report = try await phone.sync()
        #expect(report.conflicts == 1 && report.sent == 0)
        let conflict = try #require(try await phone.snapshot().conflicts.first)
        #expect(conflict.server.title == "plan the trip (tablet)" && conflict.mine?.title == "plan the trip (phone)" && conflict.mine?.done == true)
        #expect(conflict.writes.count == 2, "the completion made after the edit waits with it")
        #expect(try await server.get(id: todo.id).title == "plan the trip (tablet)", "nothing was forced")

        // The app keeps its own version: sent over appd's current one.
        try await phone.resolve(todo.id, .keepMine)
        try await phone.sync()
        let resolved = try await server.get(id: todo.id)
        #expect(resolved.title == "plan the trip (phone)" && resolved.done)
        #expect(try await phone.snapshot().conflicts.isEmpty)
        try await tablet.sync()
        #expect(try await tablet.todos() == [resolved])
        await #expect(throws: OfflineError.noConflict(todo.id)) { try await phone.resolve(todo.id, .keepServer) }
    }

    @Test func aDeleteElsewhereDropsTheEditsAndARefusalIsKeptWithItsReason() async throws {
        let server = InMemoryTodos()
        let phone = OfflineTodos(service: server, store: InMemoryOfflineTodosStore())
        let gone = try await phone.add(title: "gone soon")
        try await phone.sync()
        try await server.delete(id: gone.id)
        try await phone.update(id: gone.id, TodoEdit(notes: "too late"))
        let bad = try await phone.add(title: String(repeating: "x", count: 201))
        let report = try await phone.sync()
        #expect(report.gone == 1 && report.rejected == 1, "\(report)")
        let rejected = try #require(try await phone.snapshot().rejected.first)
        #expect(rejected.write.todoId == bad.id && rejected.error == "io.appd.Todos.ValidationFailed" && !rejected.reason.isEmpty)
        #expect(try await phone.todos().isEmpty)
    }

    /// `run()` follows the feed: a change made elsewhere arrives without a sync call, once.
    @Test func runFollowsChangesMadeElsewhere() async throws {
        let server = InMemoryTodos()
        let phone = OfflineTodos(service: server, store: InMemoryOfflineTodosStore())
        var snapshots = try await phone.snapshots().makeAsyncIterator()
        _ = await snapshots.next()
        let running = Task { await phone.run() }
        defer { running.cancel() }
        let elsewhere = try await server.add(title: "from the web")
        var pulls = 0
        while let snapshot = await snapshots.next() {
            pulls += snapshot.pulled.filter { $0.id == elsewhere.id }.count
            if snapshot.todos.map(\.id) == [elsewhere.id] { break }
        }
        #expect(pulls == 1)
        // An edit made here while running is sent without a sync call.
        try await phone.complete(id: elsewhere.id)
        while let snapshot = await snapshots.next(), !snapshot.pending.isEmpty {}
        #expect(try await server.get(id: elsewhere.id).done)
    }

    @Test func theFileStoreKeepsTheStatePrivateAndSaysWhenItCannotReadIt() async throws {
        let folder = NSTemporaryDirectory() + "appd-offline-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/todos.json"
        let server = InMemoryTodos()
        await server.setReachable(false)
        let first = OfflineTodos(service: server, store: FileOfflineTodosStore(path: path))
        let todo = try await first.add(title: "kept on disk", due: Date(rfc3339: "2026-12-24T18:00:00Z"))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let reopened = OfflineTodos(service: server, store: FileOfflineTodosStore(path: path))
        #expect(try await reopened.todos() == [todo])
        #expect(try await reopened.todos().first?.dueDate == Date(rfc3339: "2026-12-24T18:00:00.000Z"))

        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        let corrupt = OfflineTodos(service: server, store: FileOfflineTodosStore(path: path))
        await #expect(throws: OfflineError.self) { _ = try await corrupt.todos() }
    }

    @Test func datesReadAndWriteRFC3339() {
        let date = Date(rfc3339: "2026-12-01T09:30:00.250+01:00")
        #expect(date?.timeIntervalSince1970 == 1_796_113_800.25)
        #expect(date?.rfc3339 == "2026-12-01T08:30:00.250Z")
        #expect(Date(rfc3339: "yesterday") == nil)
        #expect(Todo.newID().wholeMatch(of: /t_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/) != nil)
    }

    /// Conversations have the same offline repository: created and renamed offline, sent once,
    /// a rename made elsewhere meanwhile is a conflict with both titles.
    @Test func conversationsWorkOfflineTheSameWay() async throws {
        let chat = InMemoryChat()
        let phone = OfflineConversations(service: chat, store: InMemoryOfflineConversationsStore())
        let trip = try await phone.create(title: "trip")
        try await phone.rename(id: trip.id, title: "trip to Lisbon")
        let scratch = try await phone.create(title: "scratch")
        try await phone.delete(id: scratch.id)
        #expect(try await phone.conversations().map(\.title) == ["trip to Lisbon"])
        let report = try await phone.sync()
        #expect(report.sent == 4 && report.pulled >= 1, "\(report)")
        let listed = await chat.conversations(query: nil, cursor: nil, limit: nil).conversations
        #expect(listed.map(\.id) == [trip.id] && listed.first?.title == "trip to Lisbon" && listed.first?.version == 2)

        _ = try await chat.rename(conversationId: trip.id, title: "Lisbon (web)")
        try await phone.rename(id: trip.id, title: "Lisbon (phone)")
        #expect(try await phone.sync().conflicts == 1)
        let conflict = try #require(try await phone.snapshot().conflicts.first)
        #expect(conflict.server.title == "Lisbon (web)" && conflict.mine?.title == "Lisbon (phone)")
        try await phone.resolve(trip.id, .keepServer)
        try await phone.sync()
        #expect(try await phone.conversations().map(\.title) == ["Lisbon (web)"])
        #expect(await chat.conversations(query: nil, cursor: nil, limit: nil).conversations.first?.version == 3, "keeping appd's sends nothing")
    }
}
