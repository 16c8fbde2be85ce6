// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import PluginKit
import Storage
import Testing
import TestSupport
@testable import Auth
@testable import Todos

/// `Todos.Changes`: a device pulls what changed since its cursor (tombstones included) and then
/// subscribes from that cursor with no gap and no repeat.
@Suite(.cleansUp) struct TodosChangesTests {
    /// A device's local copy, brought up to date by pulling.
    struct Replica {
        var todos: [String: Todo] = [:]
        var cursor: Int64?

        mutating func pull(_ h: Harness, as caller: Caller, limit: Int = 2) async throws {
            // Other tests' transactions on a shared PostgreSQL may hold the log back longer than a
            // pull waits under load (`EventLog.settle`); what a pull returns is what is tested here.
            try await h.settled()
            while true {
                let page = try await h.bus.send(TodosInterface.Changes(cursor: cursor, limit: limit), as: caller)
                for change in page.changes {
                    if change.deleted { todos[change.id] = nil } else { todos[change.id] = change.todo }
                }
                cursor = page.nextCursor
                if !page.more { return }
            }
        }
    }

    func serverState(_ h: Harness, as caller: Caller) async throws -> [String: Todo] {
        let todos = try await h.bus.send(TodosInterface.List(filter: nil, cursor: nil, limit: 500), as: caller).todos
        return Dictionary(uniqueKeysWithValues: todos.map { ($0.id, $0) })
    }

    @Test func aDeviceThatWasAwayCatchesUpExactlyTombstonesIncluded() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        var kept: [Todo] = []
        for i in 0..<5 { kept.append(try await h.add("todo \(i)", as: ada)) }
        _ = try await h.add("bob's", as: bob)
        var device = Replica()
        try await device.pull(h, as: ada)
        #expect(device.todos == (try await serverState(h, as: ada)))

        // Away: adds, edits, a completion, deletions (one of a todo the device never saw).
        let later = try await h.add("added while away", as: ada)
        let brief = try await h.add("added and deleted while away", as: ada)
        _ = try await h.bus.send(TodosInterface.Update(id: kept[0].id, title: "edited"), as: ada)
        _ = try await h.bus.send(TodosInterface.Complete(id: kept[1].id), as: ada)
        _ = try await h.bus.send(TodosInterface.Delete(id: kept[2].id), as: ada)
        _ = try await h.bus.send(TodosInterface.Delete(id: brief.id), as: ada)
        _ = try await h.bus.send(TodosInterface.ClearCompleted(), as: ada)
        // The event log's retention runs meanwhile: the feed does not depend on it.
        try await EventLog(database: h.database).prune(maxAge: nil, maxCount: 1)

        let before = device.cursor
        try await device.pull(h, as: ada)
        #expect(device.todos == (try await serverState(h, as: ada)))
        #expect(device.todos[later.id] != nil && device.todos[kept[2].id] == nil && device.todos[kept[1].id] == nil)
        #expect(device.cursor! > before!)
        // Nothing more to pull; bob's changes never show.
        let empty = try await h.bus.send(TodosInterface.Changes(cursor: device.cursor, limit: nil), as: ada)
        #expect(empty.changes.isEmpty && !empty.more && empty.nextCursor == device.cursor)
    }

    @Test func pullThenSubscribeLosesNothingWrittenInBetween() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let userID = try await h.bus.send(AuthInterface.WhoAmI(), as: ada).user.id
        _ = try await h.add("before", as: ada)
        var device = Replica()
        try await device.pull(h, as: ada)
        // Written after the pull, before the subscription: replayed from the cursor.
        let between = try await h.add("between", as: ada)
        // A replay reads what is final (on PostgreSQL, once older transactions of other tests ended).
        try await h.settled()
        let replayed = try await EventLog(database: h.database).events(about: userID, after: device.cursor!, limit: 100)
        #expect(replayed.map(\.topic) == ["todos.created"])
        #expect(try replayed.first?.json()["todoId"] == .string(between.id))
        // And the next pull from the same cursor shows the same change once.
        let page = try await h.bus.send(TodosInterface.Changes(cursor: device.cursor, limit: nil), as: ada)
        #expect(page.changes.map(\.id) == [between.id])
        #expect(page.changes.first?.seq == replayed.first?.sequence)
    }

    @Test func aCursorOlderThanTheTombstonesKeptMustResync() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let doomed = try await h.add("doomed", as: ada)
        var device = Replica()
        try await device.pull(h, as: ada)
        _ = try await h.bus.send(TodosInterface.Delete(id: doomed.id), as: ada)
        let feed = SQLTodosRepository.feed
        #expect(try await feed.prune(h.database, olderThan: .seconds(3600)) == 0)
        let later = WallTime(nanosecondsSinceEpoch: WallTime.now().nanosecondsSinceEpoch + 7_200_000_000_000)
        #expect(try await feed.prune(h.database, olderThan: .seconds(3600), now: later) == 1)
        await expectTodosError("ResyncRequired") { _ = try await h.bus.send(TodosInterface.Changes(cursor: device.cursor, limit: nil), as: ada) }
        // Starting again from an empty cursor works, and its cursor is current.
        var fresh = Replica()
        try await fresh.pull(h, as: ada)
        #expect(fresh.todos.isEmpty)
        #expect(try await h.bus.send(TodosInterface.Changes(cursor: fresh.cursor, limit: nil), as: ada).changes.isEmpty)
    }

    @Test func todosFromBeforeTheFeedArePagedThroughOnAFirstPull() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        for i in 0..<5 { _ = try await h.add("old \(i)", as: ada) }
        // As the migration leaves rows that existed before it: distinct sequences below zero.
        try await h.database.write { tx in try tx.execute("UPDATE todos SET change_seq = seq - 4611686018427387904") }
        var device = Replica()
        try await device.pull(h, as: ada, limit: 2)
        #expect(device.todos.count == 5)
        #expect(device.cursor! >= 0)
    }
}
