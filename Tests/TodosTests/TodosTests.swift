// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Crypto
import Glibc
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth
@testable import Todos

typealias Harness = PluginHarness

extension PluginHarness {
    /// Auth and todos wired as appd wires them.
    static func make(maxTodosPerUser: Int = 10_000, storageLimit: Int64 = TodosPlugin.defaultStorageLimit) async throws -> PluginHarness {
        try await make { _ in [try AuthPlugin.testing(), TodosPlugin(maxTodosPerUser: maxTodosPerUser, storageLimit: storageLimit)] }
    }

    func add(_ title: String, as caller: Caller) async throws -> Todo {
        try await bus.send(TodosInterface.Add(title: title, notes: nil, dueAt: nil), as: caller).todo
    }
}

func expectTodosError(_ name: String, field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(name)", sourceLocation: sourceLocation)
    } catch let error as TodosError {
        #expect(error.wireName == "io.appd.Todos.\(name)", sourceLocation: sourceLocation)
        if let field { #expect(error.wireParameters["field"] == .string(field), sourceLocation: sourceLocation) }
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite(.cleansUp) struct TodosTests {
    @Test func validationNamesTheField() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        await expectTodosError("ValidationFailed", field: "title") { _ = try await h.add("   ", as: ada) }
        await expectTodosError("ValidationFailed", field: "title") { _ = try await h.add(String(repeating: "x", count: 201), as: ada) }
        await expectTodosError("ValidationFailed", field: "notes") {
            _ = try await h.bus.send(TodosInterface.Add(title: "t", notes: String(repeating: "n", count: 10_001), dueAt: nil), as: ada)
        }
        await expectTodosError("ValidationFailed", field: "dueAt") {
            _ = try await h.bus.send(TodosInterface.Add(title: "t", notes: nil, dueAt: "tomorrow"), as: ada)
        }
        // Found by fuzzing: a year past 2262 does not fit in nanoseconds and used to trap.
        await expectTodosError("ValidationFailed", field: "dueAt") {
            _ = try await h.bus.send(TodosInterface.Add(title: "t", notes: nil, dueAt: "9999-12-31T23:59:59Z"), as: ada)
        }
        let todo = try await h.bus.send(TodosInterface.Add(title: "  Buy milk  ", notes: nil, dueAt: "2026-12-24T18:00:00+02:00"), as: ada).todo
        #expect(todo.title == "Buy milk")
        #expect(todo.dueAt == "2026-12-24T16:00:00.000Z")
    }

    @Test func theGatesComeFirst() async throws {
        let h = try await Harness.make()
        let anonymous = Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 1))
        do {
            _ = try await h.add("x", as: anonymous)
            Issue.record("expected Unauthenticated")
        } catch let error as AuthError {
            #expect(error == .unauthenticated)
        }
    }

    @Test func usersCannotSeeOrChangeEachOthersTodos() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        let todo = try await h.add("Ada's", as: ada)
        await expectTodosError("NotFound") { _ = try await h.bus.send(TodosInterface.Get(id: todo.id), as: bob) }
        await expectTodosError("NotFound") { _ = try await h.bus.send(TodosInterface.Complete(id: todo.id), as: bob) }
        await expectTodosError("NotFound") { _ = try await h.bus.send(TodosInterface.Delete(id: todo.id), as: bob) }
        await expectTodosError("NotFound") {
            _ = try await h.bus.send(TodosInterface.Update(id: todo.id, title: "mine now", notes: nil, dueAt: nil), as: bob)
        }
        #expect(try await h.bus.send(TodosInterface.List(filter: nil, cursor: nil, limit: nil), as: bob).todos.isEmpty)
        #expect(try await h.bus.send(TodosInterface.Get(id: todo.id), as: ada).todo.title == "Ada's")
    }

    @Test func shortIdsWorkWhenUnique() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let todo = try await h.add("short", as: ada)
        #expect(try await h.bus.send(TodosInterface.Complete(id: String(todo.id.prefix(8))), as: ada).todo.done)
        // Any case, as typed by hand.
        #expect(try await h.bus.send(TodosInterface.Get(id: String(todo.id.prefix(8)).uppercased()), as: ada).todo.id == todo.id)
        // With or without the t_ (a newcomer typed what follows it).
        #expect(try await h.bus.send(TodosInterface.Get(id: String(todo.id.dropFirst(2).prefix(6))), as: ada).todo.id == todo.id)
        #expect(try await h.bus.send(TodosInterface.Get(id: String(todo.id.dropFirst(2))), as: ada).todo.id == todo.id)
        // Or its ending (what a list shows: ids the server makes begin with their time), any case.
        #expect(try await h.bus.send(TodosInterface.Get(id: String(todo.id.suffix(6))), as: ada).todo.id == todo.id)
        #expect(try await h.bus.send(TodosInterface.Get(id: String(todo.id.suffix(4)).uppercased()), as: ada).todo.id == todo.id)
        await expectTodosError("NotFound") { _ = try await h.bus.send(TodosInterface.Get(id: String(todo.id.suffix(3))), as: ada) }
        // Too short says so (it used to say NotFound); an ambiguous prefix says how many match.
        await expectTodosError("ValidationFailed", field: "id") { _ = try await h.bus.send(TodosInterface.Get(id: "t_"), as: ada) }
        await expectTodosError("NotFound") { _ = try await h.bus.send(TodosInterface.Get(id: "t_zzzzzzzzzzzz"), as: ada) }
        let owner = try await h.bus.send(AuthInterface.WhoAmI(), as: ada).user.id
        let repository = SQLTodosRepository(database: h.database)
        for id in ["t_SameA1", "t_sameB2"] {
            _ = try await repository.add(owner: owner, id: id, clientChosen: false, title: id, notes: nil, dueAt: nil, now: 1, limit: 100, causedBy: nil)
        }
        do {
            _ = try await h.bus.send(TodosInterface.Get(id: "t_sam"), as: ada)
            Issue.record("an ambiguous prefix was accepted")
        } catch let error as TodosError {
            #expect(error == .validationFailed(field: "id", reason: "is ambiguous: it matches 2 todos; give more characters"), "\(error)")
        }
        #expect(try await h.bus.send(TodosInterface.Get(id: "t_sameb"), as: ada).todo.id == "t_sameB2")
        // An ending two ids share is ambiguous too; a prefix that matches wins over endings.
        for id in ["t_xEnd42", "t_yEnd42", "t_End42z"] {
            _ = try await repository.add(owner: owner, id: id, clientChosen: false, title: id, notes: nil, dueAt: nil, now: 1, limit: 100, causedBy: nil)
        }
        await expectTodosError("ValidationFailed", field: "id") { _ = try await h.bus.send(TodosInterface.Get(id: "nd42"), as: ada) }
        #expect(try await h.bus.send(TodosInterface.Get(id: "end42"), as: ada).todo.id == "t_End42z")
        #expect(try await h.bus.send(TodosInterface.Get(id: "yend42"), as: ada).todo.id == "t_yEnd42")
    }

    @Test func pagesNeitherRepeatNorSkipWhileTheListChanges() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        var ids: [String] = []
        for i in 0..<25 { ids.append(try await h.add("todo \(i)", as: ada).id) }
        let first = try await h.bus.send(TodosInterface.List(filter: nil, cursor: nil, limit: 10), as: ada)
        #expect(first.todos.map(\.id) == Array(ids[0..<10]))
        // Between pages: delete one already shown, one not yet shown, and add two.
        _ = try await h.bus.send(TodosInterface.Delete(id: ids[3]), as: ada)
        _ = try await h.bus.send(TodosInterface.Delete(id: ids[14]), as: ada)
        let late = [try await h.add("late 1", as: ada).id, try await h.add("late 2", as: ada).id]
        var seen = first.todos.map(\.id)
        var cursor = first.nextCursor
        while let next = cursor {
            let page = try await h.bus.send(TodosInterface.List(filter: nil, cursor: next, limit: 10), as: ada)
            seen += page.todos.map(\.id)
            cursor = page.nextCursor
        }
        let expected = Array(ids[0..<10]) + ids[10...].filter { $0 != ids[14] } + late
        #expect(seen == expected)
        #expect(Set(seen).count == seen.count)
    }

    @Test func createdAndUpdatedEventsCarryTheDueTimeAsItStands() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let events = try h.bus.subscribe("todos.>")
        let todo = try await h.bus.send(TodosInterface.Add(title: "call", notes: nil, dueAt: "2031-05-01T09:00:00Z"), as: ada).todo
        _ = try await h.bus.send(TodosInterface.Update(id: todo.id, title: "call back", notes: nil, dueAt: nil), as: ada)
        _ = try await h.bus.send(TodosInterface.Update(id: todo.id, title: nil, notes: "n", dueAt: ""), as: ada)
        var iterator = events.makeAsyncIterator()
        let created = try #require(try await iterator.next()?.decode(as: TodoCreated.self))
        #expect(created.dueAt == todo.dueAt && created.dueAt != nil && created.title == "call")
        // A change that leaves the due time keeps it in the event; clearing it leaves none.
        let renamed = try #require(try await iterator.next()?.decode(as: TodoUpdated.self))
        #expect(renamed.title == "call back" && renamed.dueAt == todo.dueAt)
        let cleared = try #require(try await iterator.next()?.decode(as: TodoUpdated.self))
        #expect(cleared.title == "call back" && cleared.dueAt == nil)
        events.cancel()
    }

    @Test func eventsExactlyOncePerChangeAndNoneOnFailure() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let events = try h.bus.subscribe("todos.>")
        let todo = try await h.add("one", as: ada)
        _ = try await h.bus.send(TodosInterface.Update(id: todo.id, title: "one!", notes: "n", dueAt: nil), as: ada)
        _ = try await h.bus.send(TodosInterface.Complete(id: todo.id), as: ada)
        _ = try await h.bus.send(TodosInterface.Complete(id: todo.id), as: ada)  // no change, no event
        _ = try await h.bus.send(TodosInterface.Reopen(id: todo.id), as: ada)
        await expectTodosError("NotFound") { _ = try await h.bus.send(TodosInterface.Complete(id: "t_doesnotexist"), as: ada) }
        await expectTodosError("ValidationFailed") { _ = try await h.bus.send(TodosInterface.Update(id: todo.id, title: "", notes: nil, dueAt: nil), as: ada) }
        _ = try await h.bus.send(TodosInterface.Delete(id: todo.id), as: ada)
        var topics: [String] = []
        var iterator = events.makeAsyncIterator()
        for _ in 0..<5 { topics.append(try await iterator.next()?.topic ?? "") }
        #expect(topics == ["todos.created", "todos.updated", "todos.completed", "todos.reopened", "todos.deleted"])
        let log = try await h.loggedEvents(limit: 100).filter { $0.topic.hasPrefix("todos.") }
        #expect(log.count == 5)
        events.cancel()
        var rest = 0
        for try await _ in events { rest += 1 }
        #expect(rest == 0)  // nothing beyond the five
    }

    @Test func deletingTheAccountErasesItsTodos() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        for i in 0..<3 { _ = try await h.add("ada \(i)", as: ada) }
        _ = try await h.add("bob", as: bob)
        let consumers = TodosPlugin().services(h.context)
        let running = Task { try await consumers[0].run() }
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: ada)
        var left = -1
        for _ in 0..<200 where left != 1 {
            try await Task.sleep(for: .milliseconds(10))
            left = try await h.database.read { try $0.query("SELECT COUNT(*) AS n FROM todos").first?.integer("n") }.map(Int.init) ?? -1
        }
        #expect(left == 1)  // only bob's
        running.cancel()
        _ = await running.result
    }

    @Test func clearCompletedDeletesOnlyDoneTodos() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let a = try await h.add("a", as: ada)
        _ = try await h.add("b", as: ada)
        _ = try await h.bus.send(TodosInterface.Complete(id: a.id), as: ada)
        #expect(try await h.bus.send(TodosInterface.ClearCompleted(), as: ada).deleted == 1)
        #expect(try await h.bus.send(TodosInterface.List(filter: "done", cursor: nil, limit: nil), as: ada).todos.isEmpty)
        #expect(try await h.bus.send(TodosInterface.List(filter: "open", cursor: nil, limit: nil), as: ada).todos.map(\.title) == ["b"])
    }
}

@Suite(.cleansUp) struct RFC3339Tests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)), ("2026-12-24T18:00:00+02:00", Int64(1_798_128_000)), ("2000-02-29T12:00:00.5Z", Int64(951_825_600)),
    ])
    func parses(text: String, seconds: Int64) {
        #expect(RFC3339.parse(text).map { $0.nanosecondsSinceEpoch / 1_000_000_000 } == seconds)
    }

    @Test(arguments: ["2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-12-24 18:00", "2026-12-24T18:00:00", "yesterday", "2026-12-24T25:00:00Z"])
    func rejects(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }
}

/// Security review finding 9: what one account stores is bounded.
@Suite(.cleansUp) struct TodosQuotaTests {
    @Test func anAccountHoldsAtMostItsQuotaAndDeletingMakesRoom() async throws {
        let h = try await Harness.make(maxTodosPerUser: 3)
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        // Concurrent adds cannot pass the quota together.
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<6 { group.addTask { (try? await h.add("todo \(i)", as: ada)) != nil } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 3)
        do {
            _ = try await h.add("one more", as: ada)
            Issue.record("a fourth todo was stored")
        } catch let error as TodosError {
            #expect(error == .quotaExceeded(limit: 3))
        }
        _ = try await h.add("bob's first", as: bob)
        let first = try await h.bus.send(TodosInterface.List(filter: nil, cursor: nil, limit: nil), as: ada).todos[0]
        _ = try await h.bus.send(TodosInterface.Delete(id: first.id), as: ada)
        _ = try await h.add("room again", as: ada)
    }
}

/// An id given without its `t_` whose random part itself begins with `t_` still resolves.
@Suite(.cleansUp) struct TodoIdPrefixTests {
    @Test func aRandomPartThatBeginsWithTheTypePrefixResolves() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let owner = try await h.bus.send(AuthInterface.WhoAmI(), as: ada).user.id
        _ = try await SQLTodosRepository(database: h.database).add(
            owner: owner, id: "t_t_Xy9Qw", clientChosen: false, title: "odd id", notes: nil, dueAt: nil, now: 1, limit: 100, causedBy: nil)
        #expect(try await h.bus.send(TodosInterface.Get(id: "t_Xy9Q"), as: ada).todo.id == "t_t_Xy9Qw")
        #expect(try await h.bus.send(TodosInterface.Get(id: "t_t_Xy"), as: ada).todo.id == "t_t_Xy9Qw")
    }
}

@Suite(.cleansUp) struct GuestTodosTests {
    @Test func aGuestKeepsItsTodosWhenUpgradedAndLosesThemWhenIdle() async throws {
        let h = try await PluginHarness.make { clock in
            [try AuthPlugin.testing(clock: clock) { $0.guestAccounts = true }, TodosPlugin(maxTodosPerUser: 100)]
        }
        let guestSession = try await h.bus.send(AuthInterface.SignInAnonymously()).session
        #expect(guestSession.user.guest && guestSession.user.email == "")
        let guest = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: guestSession.accessToken), as: guest)
        _ = try await h.bus.send(AuthInterface.CompleteOnboarding(), as: guest)
        _ = try await h.add("kept across the upgrade", as: guest)
        let upgraded = try await h.bus.send(AuthInterface.UpgradeGuest(email: "ada@example.com", password: "correct horse"), as: guest).user
        #expect(upgraded.id == guestSession.user.id && !upgraded.guest && upgraded.email == "ada@example.com" && !upgraded.emailVerified)
        // The same account, now with a password: its todo is there.
        let session = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse")).session
        let ada = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: ada)
        #expect(try await h.bus.send(TodosInterface.List(filter: nil, cursor: nil, limit: nil), as: ada).todos.map(\.title) == ["kept across the upgrade"])

        // Another guest, left idle past the limit, is erased with its todos; the upgraded account stays.
        let idleSession = try await h.bus.send(AuthInterface.SignInAnonymously()).session
        let idle = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: idleSession.accessToken), as: idle)
        _ = try await h.bus.send(AuthInterface.CompleteOnboarding(), as: idle)
        _ = try await h.add("forgotten", as: idle)
        h.clock.advance(seconds: 31 * 86_400)
        let auth = h.plugin(AuthPlugin.self)
        let sweep = GuestSweepService(
            repository: auth.service(h.database).repository, clock: { h.clock.now }, idle: .seconds(30 * 86_400), interval: .seconds(3600), logger: Logger(label: "test"))
        let consumers = TodosPlugin().services(h.context)
        let running = Task { try await consumers[0].run() }
        #expect(try await sweep.sweep() == 1)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 1)
        #expect(try await eventually { try await h.count("SELECT COUNT(*) AS n FROM todos") == 1 }, "the todos plugin erased the guest's todos")
        running.cancel()
        _ = await running.result
    }
}
