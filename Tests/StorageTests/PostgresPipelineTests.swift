// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing
import TestSupport
@testable import Storage

extension PostgresTests {
    /// `Transaction.pipeline` on PostgreSQL: statements sent together (one round trip), each by a
    /// name prepared once per connection, each one's rows back in order; one that fails throws its
    /// own error, those after it do not run, and the write changes nothing.
    @Suite struct Pipeline {
        func database() async throws -> PostgresDatabase {
            let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
            var options = PostgresDatabase.Options()
            options.readers = 1
            let database = try await PostgresDatabase.open(url: url, outbox: nil, options: options)
            try await database.write { tx in
                try tx.execute("CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
            }
            return database
        }

        @Test func eachStatementsRowsComeBackInOrderFromPreparedStatements() async throws {
            let database = try await database()
            let (results, prepared) = try await database.write { tx in
                let results = try tx.pipeline([
                    SQLStatement("INSERT INTO items (id, n) VALUES (?, ?) RETURNING n", [.text("a"), .integer(1)]),
                    SQLStatement("INSERT INTO items (id, n) VALUES (?, ?)", [.text("b"), .integer(2)]),
                    SQLStatement("SELECT id FROM items ORDER BY id", []),
                ])
                // The same session: its prepared statements are the pipeline's.
                let prepared = try tx.query("SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%items%'").compactMap { $0.text("statement") }
                return (results.map { $0.map { $0.values.description } }, prepared)
            }
            #expect(results.count == 3)
            let rows = try await database.read { tx in try tx.query("SELECT id, n FROM items ORDER BY id").map { "\($0.text("id") ?? "")=\($0.integer("n") ?? -1)" } }
            #expect(rows == ["a=1", "b=2"])
            #expect(prepared.contains { $0.contains("VALUES ($1, $2) RETURNING n") }, "sent by name, prepared once: \(prepared)")
            #expect(prepared.contains { $0.contains("SELECT id FROM items ORDER BY id") })
            // Again on the same connection: the prepared statements are reused, and the answers
            // belong to this run (the SELECT sees all three rows).
            let again = try await database.write { tx in
                try tx.pipeline([
                    SQLStatement("INSERT INTO items (id, n) VALUES (?, ?) RETURNING n", [.text("c"), .integer(3)]),
                    SQLStatement("SELECT id FROM items ORDER BY id", []),
                ])
            }
            #expect(again[0].first?.integer("n") == 3)
            #expect(again[1].compactMap { $0.text("id") } == ["a", "b", "c"])
            await database.close()
        }

        @Test func aFailingStatementThrowsItsOwnErrorAndTheWriteChangesNothing() async throws {
            let database = try await database()
            try await database.write { tx in try tx.execute("INSERT INTO items (id, n) VALUES ('taken', 0)") }
            await #expect {
                try await database.write { tx in
                    try tx.pipeline([
                        SQLStatement("INSERT INTO items (id, n) VALUES (?, ?)", [.text("first"), .integer(1)]),
                        SQLStatement("INSERT INTO items (id, n) VALUES (?, ?)", [.text("taken"), .integer(2)]),
                        SQLStatement("INSERT INTO items (id, n) VALUES (?, ?)", [.text("after"), .integer(3)]),
                    ])
                }
            } throws: { error in
                (error as? StorageError)?.kind == .constraint
            }
            // Nothing of it stayed, and the connection serves the next write.
            try await database.write { tx in _ = try tx.pipeline([SQLStatement("INSERT INTO items (id, n) VALUES (?, ?)", [.text("next"), .integer(4)])]) }
            let ids = try await database.read { tx in try tx.query("SELECT id FROM items ORDER BY id").compactMap { $0.text("id") } }
            #expect(ids == ["next", "taken"])
            await database.close()
        }

        /// A batch whose one write fails in its pipeline: the others in the same group commit are
        /// kept (the batch runs again with a savepoint per write).
        @Test func theOtherWritesOfTheBatchAreKept() async throws {
            let database = try await database()
            try await database.write { tx in try tx.execute("INSERT INTO items (id, n) VALUES ('taken', 0)") }
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for i in 0..<20 {
                    group.addTask {
                        let id = i == 7 ? "taken" : "w\(i)"
                        do {
                            try await database.write { tx in
                                _ = try tx.pipeline([
                                    SQLStatement("INSERT INTO items (id, n) VALUES (?, ?)", [.text(id), .integer(Int64(i))]),
                                    SQLStatement("UPDATE items SET n = n + 1 WHERE id = ?", [.text(id)]),
                                ])
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 19)
            let count = try await database.read { tx in
                try tx.query("SELECT COUNT(*) AS c FROM items WHERE id LIKE 'w%' AND n = CAST(SUBSTRING(id FROM 2) AS INTEGER) + 1").first?.integer("c")
            }
            #expect(count == 19)
            await database.close()
        }
    }
}

extension PostgresTests {
    /// Keyed calls' rows go in with the batch's commit on PostgreSQL (no round trip of their own).
    /// A key another instance took meanwhile fails that commit; the batch runs again with each key
    /// kept in its own write, so only the call whose key was taken gets `Collision`.
    @Suite struct DeferredKeys {
        func instances() async throws -> (PostgresDatabase, PostgresDatabase) {
            let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
            var options = PostgresDatabase.Options()
            options.readers = 1
            let a = try await PostgresDatabase.open(url: url, outbox: nil, options: options)
            let b = try await PostgresDatabase.open(url: url, outbox: nil, options: options)
            try await a.write { tx in try tx.execute("CREATE TABLE notes (id TEXT PRIMARY KEY)") }
            return (a, b)
        }

        func keyed(_ key: String, note: String, on database: any Database, reply: Bool = true) async throws -> IdempotencyRecord {
            let record = IdempotencyRecord(scope: "user:u1", method: "io.appd.Test.Add", key: key, fingerprint: "f-" + key)
            try await IdempotencyRecord.$current.withValue(record) {
                try await database.write { tx in
                    try tx.execute("INSERT INTO notes (id) VALUES (?)", [.text(note)])
                    if reply { try tx.stageReply(["note": .string(note)] as JSONValue) }
                }
            }
            return record
        }

        @Test func keyedRowsAreKeptWithTheirRepliesAtTheCommit() async throws {
            let (a, b) = try await instances()
            let records = try await withThrowingTaskGroup(of: IdempotencyRecord.self) { group in
                for i in 0..<30 { group.addTask { try await keyed("k\(i)", note: "n\(i)", on: a, reply: i % 2 == 0) } }
                return try await group.reduce(into: [IdempotencyRecord]()) { $0.append($1) }
            }
            #expect(records.allSatisfy { $0.outcome.committed })
            #expect(records.filter { $0.outcome.withReply }.count == 15)
            let rows = try await b.read { tx in try tx.query("SELECT key, outcome FROM appd_idempotency WHERE scope = 'user:u1'") }
            #expect(rows.count == 30)
            #expect(rows.filter { $0.text("outcome")?.contains("n") == true }.count == 15, "the staged replies were kept")
            await a.close()
            await b.close()
        }

        @Test func aKeyTakenOnAnotherInstanceFailsOnlyItsOwnCall() async throws {
            let (a, b) = try await instances()
            _ = try await keyed("shared", note: "on A", on: a)
            // B's batch: many keyed writes, one of them with the key A took.
            let outcomes = await withTaskGroup(of: (String, Bool).self) { group in
                for i in 0..<20 {
                    group.addTask {
                        let key = i == 9 ? "shared" : "b\(i)"
                        do {
                            _ = try await keyed(key, note: "b-note-\(i)", on: b)
                            return (key, true)
                        } catch is IdempotencyLog.Collision {
                            return (key, false)
                        } catch {
                            return (key + " \(error)", false)
                        }
                    }
                }
                return await group.reduce(into: [(String, Bool)]()) { $0.append($1) }
            }
            #expect(outcomes.filter { !$0.1 }.map(\.0) == ["shared"], "only the taken key's call collided: \(outcomes.filter { !$0.1 })")
            let notes = try await a.read { tx in try tx.query("SELECT id FROM notes ORDER BY id").compactMap { $0.text("id") } }
            #expect(notes.count == 20, "A's note and B's 19")
            #expect(!notes.contains("b-note-9"), "the collided call's write was undone")
            await a.close()
            await b.close()
        }
    }
}
