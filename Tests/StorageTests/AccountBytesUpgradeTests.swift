// SPDX-License-Identifier: Apache-2.0
import BusCore
import Testing
import TestSupport
@testable import Storage

/// The per-account byte counts became a `WITHOUT ROWID` table (one b-tree per charge): a database
/// made before keeps its counts through the rebuild, and the quota still holds after it.
@Suite struct AccountBytesUpgradeTests {
    @Test func aTableMadeWithRowidsIsRebuiltKeepingItsCounts() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        // The old shape, written and closed (the connection closes when it goes).
        try SQLiteConnection(path: dir + "/appd.db", busyTimeoutMilliseconds: 1000).executeScript(
            """
            CREATE TABLE appd_account_bytes (owner TEXT NOT NULL, part TEXT NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (owner, part));
            INSERT INTO appd_account_bytes VALUES ('u_ada', 'todos', 90), ('u_ada', 'chat', 5), ('u_bob', 'todos', 7);
            """)

        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        let made = try await database.read { tx in
            try tx.query("SELECT sql FROM sqlite_master WHERE name = 'appd_account_bytes'").first?.text("sql") ?? ""
        }
        #expect(made.contains("WITHOUT ROWID"))
        let counts = try await database.read { tx in
            try tx.query("SELECT owner, part, bytes FROM appd_account_bytes ORDER BY owner, part").map {
                "\($0.text("owner") ?? "")/\($0.text("part") ?? "")=\($0.integer("bytes") ?? -1)"
            }
        }
        #expect(counts == ["u_ada/chat=5", "u_ada/todos=90", "u_bob/todos=7"])
        // Ada holds 95 bytes: 10 more would pass a 100-byte limit, and change nothing.
        await #expect(throws: StorageQuotaExceeded.self) {
            try await database.write { tx in try AccountBytes.charge(tx, owner: "u_ada", part: "todos", delta: 10, limit: 100) }
        }
        try await database.write { tx in try AccountBytes.charge(tx, owner: "u_ada", part: "todos", delta: 5, limit: 100) }
        await database.close()

        // Opened again: already rebuilt, nothing to do.
        let again = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        let total = try await again.read { tx in try tx.query("SELECT SUM(bytes) AS n FROM appd_account_bytes WHERE owner = 'u_ada'").first?.integer("n") }
        #expect(total == 100)
        await again.close()
    }

    /// A table made before parts counted their items gets `items` (0 for every row), keeping
    /// its bytes; a charge then moves both.
    @Test func aTableWithoutItemsGetsTheColumn() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        try SQLiteConnection(path: dir + "/appd.db", busyTimeoutMilliseconds: 1000).executeScript(
            """
            CREATE TABLE appd_account_bytes (owner TEXT NOT NULL, part TEXT NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (owner, part)) WITHOUT ROWID;
            INSERT INTO appd_account_bytes VALUES ('u_ada', 'todos', 90);
            """)
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        try await database.write { tx in try AccountBytes.charge(tx, owner: "u_ada", part: "todos", delta: 5, items: 2, limit: 100) }
        let row = try await database.read { tx in try tx.query("SELECT bytes, items FROM appd_account_bytes WHERE owner = 'u_ada'").first }
        #expect(row?.integer("bytes") == 95 && row?.integer("items") == 2)
        // Counts never go below zero, as bytes do not.
        try await database.write { tx in try AccountBytes.charge(tx, owner: "u_ada", part: "todos", delta: -5, items: -3, limit: 100) }
        #expect(try await database.read { tx in try tx.query("SELECT items FROM appd_account_bytes WHERE owner = 'u_ada'").first?.integer("items") } == 0)
        await database.close()
    }
}
