// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth
@testable import Todos

/// What an offline-first client relies on (issue 32): keyed writes have their effect once and
/// give the first outcome again, versions detect a change made elsewhere, client ids make an
/// Add safe to repeat, and `Changes` brings a device that was away to exactly the server's state.
@Suite(.cleansUp) struct OfflineTodosTests {
    static func key() throws -> IdempotencyKey { try IdempotencyKey("k-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)) }

    func add(_ h: Harness, _ title: String, as caller: Caller, key: IdempotencyKey) async throws -> Todo {
        try await h.bus.send(TodosInterface.Add(title: title, notes: nil, dueAt: nil), as: caller, idempotencyKey: key).todo
    }

    @Test func aRetriedKeyedAddHasItsEffectOnceAndTheSameReply() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let key = try Self.key()
        let first = try await add(h, "buy milk", as: ada, key: key)
        let again = try await add(h, "buy milk", as: ada, key: key)
        #expect(again == first)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM todos") == 1)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM appd_events WHERE topic = 'todos.created'") == 1)
        // The reply was kept in the Add's own transaction (staged), not written after it.
        let outcome = try await h.database.read { tx in try tx.query("SELECT outcome FROM appd_idempotency").first?.text("outcome") }
        #expect(outcome?.contains(first.id) == true)
        // Another user's identical key is theirs alone.
        let bob = try await h.user("bob@example.com").caller
        #expect(try await add(h, "buy milk", as: bob, key: key).id != first.id)
    }

    @Test func aKeyWithOtherParametersOrOnAMethodThatTakesNoneIsRefused() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let key = try Self.key()
        _ = try await add(h, "one", as: ada, key: key)
        await #expect(throws: IdempotencyKeyReused(method: "io.appd.Todos.Add")) { _ = try await add(h, "two", as: ada, key: key) }
        await #expect(throws: IdempotencyNotSupported(method: "io.appd.Todos.Get")) {
            _ = try await h.bus.send(TodosInterface.Get(id: "t_abcd"), as: ada, idempotencyKey: key)
        }
        #expect(throws: InvalidIdempotencyKey.self) { try IdempotencyKey("") }
        #expect(throws: InvalidIdempotencyKey.self) { try IdempotencyKey(String(repeating: "k", count: 256)) }
        #expect(throws: InvalidIdempotencyKey.self) { try IdempotencyKey("has space") }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM todos") == 1)
    }

    @Test func concurrentCallsWithOneKeyHaveOneEffect() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let key = try Self.key()
        let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        return try await add(h, "once", as: ada, key: key).id
                    } catch is IdempotencyKeyInUse {
                        return "in use"
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM todos") == 1)
        #expect(Set(outcomes.filter { $0 != "in use" }).count == 1)
        // Once the first has finished, a retry gets its reply.
        let id = try await h.database.read { tx in try tx.query("SELECT id FROM todos").first?.text("id") }
        #expect(try await add(h, "once", as: ada, key: key).id == id)
    }

    @Test func theMethodsOwnErrorIsKeptAndAGatesRefusalIsNot() async throws {
        let h = try await Harness.make(maxTodosPerUser: 1)
        let ada = try await h.user("ada@example.com").caller
        let key = try Self.key()
        let missing = TodosInterface.Delete(id: "t_nothere", expectedVersion: nil)
        await expectTodosError("NotFound") { _ = try await h.bus.send(missing, as: ada, idempotencyKey: key) }
        // The retry gets the same error, from the store.
        await #expect(throws: StoredWireError(name: "io.appd.Todos.NotFound", parameters: [:])) {
            _ = try await h.bus.send(missing, as: ada, idempotencyKey: key)
        }
        // A session gate's refusal is not an outcome: the same key works once signed in.
        let other = try Self.key()
        await #expect(throws: (any Error).self) { _ = try await add(h, "x", as: h.connection(), key: other) }
        #expect(try await add(h, "x", as: ada, key: other).title == "x")
    }

    @Test func aWriteThatCommittedWithItsKeyIsNotRepeatedEvenIfTheReplyNeverLeft() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let userID = try await h.bus.send(AuthInterface.WhoAmI(), as: ada).user.id
        let key = try Self.key()
        // What a crash between the commit and the reply leaves: the write committed with its
        // key's row, the gate never ran after it.
        let parameters = try JSONValue(encoding: TodosInterface.Add(title: "written", notes: nil, dueAt: nil))
        let record = IdempotencyRecord(
            scope: IdempotencyLog.userScope(userID), method: "io.appd.Todos.Add", key: key.value,
            fingerprint: IdempotencyGate.fingerprint(method: "io.appd.Todos.Add", parameters: parameters))
        let written = try await IdempotencyRecord.$current.withValue(record) {
            try await SQLTodosRepository(database: h.database).add(
                owner: userID, id: "t_crashtest", clientChosen: false, title: "written", notes: nil, dueAt: nil, now: 1, limit: 10, causedBy: nil)
        }
        #expect(try await add(h, "written", as: ada, key: key) == written)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM todos") == 1)
    }

    @Test func keysArePrunedAfterTheRetentionAndErasedWithTheAccount() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        _ = try await add(h, "a", as: ada, key: try Self.key())
        let log = IdempotencyLog(database: h.database)
        #expect(try await log.prune(olderThan: .seconds(3600)) == 0)
        #expect(try await log.prune(olderThan: .seconds(3600), now: WallTime(nanosecondsSinceEpoch: WallTime.now().nanosecondsSinceEpoch + 7_200_000_000_000)) == 1)
        _ = try await add(h, "b", as: ada, key: try Self.key())
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: ada)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM appd_idempotency") == 0)
    }

    @Test func aStaleVersionIsAConflictCarryingTheTodoAsItStands() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let todo = try await h.add("draft", as: ada)
        #expect(todo.version == 1)
        // Two devices start from version 1; the first wins.
        let phone = try await h.bus.send(TodosInterface.Update(id: todo.id, title: "from the phone", expectedVersion: 1), as: ada).todo
        #expect(phone.version == 2)
        do {
            _ = try await h.bus.send(TodosInterface.Update(id: todo.id, title: "from the tablet", expectedVersion: 1), as: ada)
            Issue.record("expected a Conflict")
        } catch let error as TodosError {
            #expect(error == .conflict(todo: phone))
        }
        await expectTodosError("Conflict") { _ = try await h.bus.send(TodosInterface.Complete(id: todo.id, expectedVersion: 1), as: ada) }
        await expectTodosError("Conflict") { _ = try await h.bus.send(TodosInterface.Delete(id: todo.id, expectedVersion: 5), as: ada) }
        #expect(try await h.bus.send(TodosInterface.Complete(id: todo.id, expectedVersion: 2), as: ada).todo.version == 3)
        // Completing a completed todo changes nothing, so its version stays.
        #expect(try await h.bus.send(TodosInterface.Complete(id: todo.id, expectedVersion: 3), as: ada).todo.version == 3)
        _ = try await h.bus.send(TodosInterface.Delete(id: todo.id, expectedVersion: 3), as: ada)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM todos") == 0)
    }

    @Test func aClientsIdMakesAnAddSafeToRepeat() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        let uuid = "6F1C2A4E-1B2D-4C3E-8F4A-5B6C7D8E9F00"
        let made = try await h.bus.send(TodosInterface.Add(title: "offline", notes: "n", dueAt: nil, id: uuid), as: ada).todo
        #expect(made.id == "t_" + uuid.lowercased())
        #expect(try await h.bus.send(TodosInterface.Add(title: "offline", notes: "n", dueAt: nil, id: "t_" + uuid.lowercased()), as: ada).todo == made)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM todos") == 1)
        await expectTodosError("Conflict") { _ = try await h.bus.send(TodosInterface.Add(title: "other", notes: "n", dueAt: nil, id: uuid), as: ada) }
        // Another account's id is not revealed, only refused.
        await expectTodosError("ValidationFailed", field: "id") {
            _ = try await h.bus.send(TodosInterface.Add(title: "offline", notes: "n", dueAt: nil, id: uuid), as: bob)
        }
        // Deleted, then added again with the same id: the feed shows the todo, not its tombstone.
        try await h.settled()  // a pull under load may wait less than a shared PostgreSQL's other transactions take
        let cursor = try await h.bus.send(TodosInterface.Changes(cursor: nil, limit: nil), as: ada).nextCursor
        _ = try await h.bus.send(TodosInterface.Delete(id: made.id), as: ada)
        let again = try await h.bus.send(TodosInterface.Add(title: "back", notes: nil, dueAt: nil, id: uuid), as: ada).todo
        try await h.settled()
        let changes = try await h.bus.send(TodosInterface.Changes(cursor: cursor, limit: nil), as: ada).changes
        #expect(changes.map(\.id) == [made.id] && changes.first?.todo == again)
        for bad in ["", "not-a-uuid", "6f1c2a4e1b2d4c3e8f4a5b6c7d8e9f00", "6f1c2a4e-1b2d-4c3e-8f4a-5b6c7d8e9fzz"] {
            await expectTodosError("ValidationFailed", field: "id") { _ = try await h.bus.send(TodosInterface.Add(title: "x", notes: nil, dueAt: nil, id: bad), as: ada) }
        }
    }
}
