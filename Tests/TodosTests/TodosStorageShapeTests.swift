// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Foundation
import PluginKit
@testable import Storage
import Testing
import TestSupport
@testable import Todos

/// What a durable `Todos.Add` costs SQLite, and databases made before todos' migration 7.
@Suite(.cleansUp) struct TodosStorageShapeTests {
    /// Each b-tree's pages of the file at `path` (the log copied in first), by b-tree name. The
    /// copy waits for readers of older snapshots without blocking a thread: no busy timeout, and
    /// tried again after a pause while it cannot finish.
    func pages(_ path: String) async throws -> [String: [Data]] {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 0)
        let copied = await eventually {
            (try? connection.run("PRAGMA wal_checkpoint(TRUNCATE)", []).first?.integer("busy")) == 0
        }
        #expect(copied, "a reader held the log: the file is not the whole database")
        let size = Int(try connection.run("PRAGMA page_size", []).first?.integer("page_size") ?? 4096)
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        var trees: [String: [Data]] = [:]
        for row in try connection.run("SELECT name, pageno FROM dbstat ORDER BY pageno", []) {
            guard let name = row.text("name"), let number = row.integer("pageno"), number > 1 else { continue }
            let start = (Int(number) - 1) * size
            trees[name, default: []].append(file.subdata(in: start..<min(file.count, start + size)))
        }
        return trees
    }

    /// The b-trees an add writes: the log and its owner index, the account's row (bytes and the
    /// todo count), the todo (keyed by owner and place), its id's index and its change-feed
    /// index — six, and no `sqlite_sequence` (issue 64: at most six; it was nine).
    @Test func anAddWritesSixBTrees() async throws {
        let h = try await Harness.make()
        guard h.database.dialect == .sqlite else { return }
        let ada = try await h.user("ada@example.com").caller
        _ = try await h.add("the account's rows exist", as: ada)
        let before = try await pages(h.databasePath)
        _ = try await h.add("counted", as: ada)
        let after = try await pages(h.databasePath)
        let written = Set(after.keys.filter { before[$0] != after[$0] })
        #expect(written == ["appd_events", "appd_events_owner", "appd_account_bytes", "todos", "sqlite_autoindex_todos_1", "todos_changes"])
    }

    /// A database at todos' version 6: its todos keep their places, order and content, its
    /// counts move to the account's row (the quota still holds), and a todo added after goes
    /// after the owner's newest, even when the event log's sequence were behind the old places.
    @Test func aDatabaseFromBeforeMigrationSevenKeepsItsTodosOrderAndCounts() async throws {
        let scope = try TestScope.required(by: "the upgrade test")
        let path = try scope.directory() + "/appd.db"
        let old = try await TestDatabase.open(path: path, outbox: nil)
        try await Migrator.migrate(old, Array(TodosMigrations.all.prefix(6)))
        try await old.write { tx in
            // Places from todos' own counter (ahead of the empty log), one deleted in between.
            for (n, (owner, title)) in [("u_ada", "first"), ("u_ada", "gone"), ("u_bob", "bob's"), ("u_ada", "second"), ("u_ada", "third")].enumerated() {
                _ = try tx.execute(
                    "INSERT INTO todos (id, owner, title, created_at, updated_at) VALUES (?, ?, ?, 1, 1)", [.text("t_old\(n)"), .text(owner), .text(title)])
            }
            _ = try tx.execute("DELETE FROM todos WHERE title = 'gone'")
            _ = try tx.execute("UPDATE todos SET change_seq = seq - 4611686018427387904")
            _ = try tx.execute("INSERT INTO todos_counts (owner, n) VALUES ('u_ada', 3), ('u_bob', 1)")
            _ = try tx.execute("INSERT INTO appd_account_bytes (owner, part, bytes) VALUES ('u_ada', 'todos', 16), ('u_ada', 'chat', 4)")
        }
        await old.close()

        let database = try await TestDatabase.open(path: path, outbox: nil)
        scope.closes(database)
        try await Migrator.migrate(database, TodosMigrations.all)
        if database.dialect == .sqlite {
            let made = try await database.read { tx in try tx.query("SELECT sql FROM sqlite_master WHERE name = 'todos'").first?.text("sql") ?? "" }
            #expect(made.contains("WITHOUT ROWID"))
        }
        let counts = try await database.read { tx in
            try tx.query("SELECT owner, part, bytes, items FROM appd_account_bytes ORDER BY owner, part").map {
                "\($0.text("owner") ?? "")/\($0.text("part") ?? "")=\($0.integer("bytes") ?? -1),\($0.integer("items") ?? -1)"
            }
        }
        #expect(counts == ["u_ada/chat=4,0", "u_ada/todos=16,3", "u_bob/todos=0,1"])

        let repository = SQLTodosRepository(database: database, storageLimit: 0)
        func titles(_ owner: String) async throws -> [String] {
            try await repository.list(owner: owner, filter: "all", after: 0, limit: 100).todos.map(\.title)
        }
        #expect(try await titles("u_ada") == ["first", "second", "third"])
        func add(_ title: String) async throws {
            _ = try await repository.add(owner: "u_ada", id: "t_\(title)", clientChosen: false, title: title, notes: nil, dueAt: nil, now: 2, limit: 5, causedBy: nil)
        }
        // The log (empty) is behind the old places: the new todo still goes last.
        try await add("fourth")
        #expect(try await titles("u_ada") == ["first", "second", "third", "fourth"])
        // The count came along: a fifth reaches the limit of five, a sixth passes it and changes nothing.
        try await add("fifth")
        await expectTodosError("QuotaExceeded") { try await add("sixth") }
        #expect(try await titles("u_ada") == ["first", "second", "third", "fourth", "fifth"])
        // As in any database appd made, the log is ahead of the places (every add logs an
        // event): the newest deleted, its place is not handed out again, so a client paging
        // after it sees the todo added next.
        if database.dialect == .sqlite {
            _ = try await database.write { tx in try tx.execute("INSERT INTO appd_events (seq, topic, time_ns, payload) VALUES (500, 'demo.hello', 1, '{}')") }
        }
        let newest = try #require(try await repository.list(owner: "u_ada", filter: "all", after: 0, limit: 100).last)
        try await repository.delete(owner: "u_ada", id: "t_fifth", expected: nil, now: 3, causedBy: nil)
        try await add("again")
        let after = try await repository.list(owner: "u_ada", filter: "all", after: newest, limit: 100).todos
        #expect(after.map(\.title) == ["again"])
        #expect(try await titles("u_bob") == ["bob's"])
        let held = try await database.read { tx in try tx.query("SELECT items FROM appd_account_bytes WHERE owner = 'u_ada' AND part = 'todos'").first?.integer("items") }
        #expect(held == 5)
    }
}
