// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Storage
import Testing
import TestSupport
@testable import Todos

/// Security review 2, finding 1: sizes were counted in grapheme clusters, and pages only in
/// rows. A title of one "character" (a letter and 5,000 combining marks) was 10 KB; a page of
/// 500 todos with full notes was 20 MB, held while the client left it unread.
@Suite(.cleansUp) struct TodosByteLimitTests {
    /// One grapheme cluster of `marks` combining acute accents on a letter.
    static func cluster(_ marks: Int) -> String { "b" + String(repeating: "\u{301}", count: marks) }

    @Test func textLimitsCountScalarsAndBytesNotClusters() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        #expect(Self.cluster(5000).count == 1, "one Character, as the old check counted it")
        await expectTodosError("ValidationFailed", field: "title") { _ = try await h.add(Self.cluster(5000), as: ada) }
        await expectTodosError("ValidationFailed", field: "notes") {
            _ = try await h.bus.send(TodosInterface.Add(title: "t", notes: String(repeating: Self.cluster(100), count: 100), dueAt: nil), as: ada)
        }
        // 200 scalars of 4 bytes each are 800 bytes: within both bounds.
        let emoji = try await h.add(String(repeating: "😀", count: 200), as: ada)
        #expect(emoji.title.utf8.count == 800)
        await expectTodosError("ValidationFailed", field: "title") { _ = try await h.add(String(repeating: "😀", count: 201), as: ada) }
        let limit = TodosService.titleLimit
        #expect(limit.violation(of: Self.cluster(199)) == nil)
        #expect(limit.violation(of: Self.cluster(200))?.contains("200 characters") == true)
        #expect(TextLimit(characters: 10, bytes: 12).violation(of: "ééééééé")?.contains("12 bytes") == true)
    }

    /// A page ends at its byte budget and says so; paging on reaches every todo exactly once.
    @Test func listAndChangesPagesAreBoundedByBytes() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let notes = String(repeating: "n", count: 10_000)
        var added: [String] = []
        for i in 0..<300 {
            added.append(try await h.bus.send(TodosInterface.Add(title: "todo \(i)", notes: notes, dueAt: nil), as: ada).todo.id)
        }
        // 300 x ~10 KB is ~3 MB: a page of 500 ends near 1 MiB, with a cursor.
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let page = try await h.bus.send(TodosInterface.List(filter: nil, cursor: cursor, limit: 500), as: ada)
            let bytes = try JSONBytesEncoder.encode(page).count
            #expect(bytes <= BytePage.defaultBudget + 12_000, "a page holds about the budget: \(bytes) bytes")
            #expect(!page.todos.isEmpty)
            seen += page.todos.map(\.id)
            cursor = page.nextCursor
            pages += 1
        } while cursor != nil && pages < 20
        #expect(pages >= 3 && pages <= 5, "\(pages) pages")
        #expect(seen == added, "every todo once, in order")

        try await h.settled()  // see TodosChangesTests.Replica.pull
        var changed: [String] = []
        var since: Int64?
        var more = true
        pages = 0
        while more && pages < 20 {
            let page = try await h.bus.send(TodosInterface.Changes(cursor: since, limit: 500), as: ada)
            #expect(try JSONBytesEncoder.encode(page).count <= BytePage.defaultBudget + 12_000)
            changed += page.changes.map(\.id)
            since = page.nextCursor
            more = page.more
            pages += 1
        }
        #expect(pages >= 3 && Set(changed) == Set(added) && changed.count == added.count, "\(pages) pages, \(changed.count) changes")
    }

    /// The first row always comes back, however large; a cut after it is seen (the row after
    /// it is read too), so `more` is right.
    @Test func aFirstRowPastTheBudgetStillComesWithMore() async throws {
        let h = try await Harness.make()
        let page = BytePage(budget: 100, columns: ["text"], rowOverhead: 0)
        let rows = try await h.database.write { tx in
            try tx.execute("CREATE TABLE sized (n INTEGER PRIMARY KEY, text TEXT)")
            for (n, size) in [(1, 500), (2, 10), (3, 10)] {
                try tx.execute("INSERT INTO sized (n, text) VALUES (?, ?)", [.integer(Int64(n)), .text(String(repeating: "é", count: size))])
            }
            return try tx.query(page.sql("SELECT * FROM sized ORDER BY n LIMIT ?", orderBy: "n", dialect: tx.dialect), page.parameters([.integer(10)]))
        }
        let (shown, cut) = page.split(rows)
        #expect(shown.compactMap { $0.integer("n") } == [1] && cut, "\(rows.map { $0.integer("n") ?? 0 })")
        let fitting = try await h.database.read { tx in
            try tx.query(page.sql("SELECT * FROM sized WHERE n > 1 ORDER BY n LIMIT ?", orderBy: "n", dialect: tx.dialect), page.parameters([.integer(10)]))
        }
        let rest = page.split(fitting)
        #expect(rest.shown.compactMap { $0.integer("n") } == [2, 3] && !rest.cut, "20 bytes of é each: 40 in all, within 100")
        // The engine's own way (SQLite steps and stops; PostgreSQL runs the SQL above) agrees.
        let (stepped, steppedRest) = try await h.database.read { tx in
            (
                try page.rows("SELECT * FROM sized ORDER BY n LIMIT ?", orderBy: "n", [.integer(10)], in: tx),
                try page.rows("SELECT * FROM sized WHERE n > 1 ORDER BY n LIMIT ?", orderBy: "n", [.integer(10)], in: tx)
            )
        }
        #expect(stepped.shown.compactMap { $0.integer("n") } == [1] && stepped.cut)
        #expect(steppedRest.shown.compactMap { $0.integer("n") } == [2, 3] && !steppedRest.cut)
    }

    /// The account's bytes of text are bounded: past the operator's limit a write is refused
    /// with io.appd.Bus.QuotaExceeded and changes nothing; deleting frees room again.
    @Test func anAccountsTextIsBoundedInBytes() async throws {
        let h = try await Harness.make(storageLimit: 100_000)
        let ada = try await h.user("ada@example.com").caller
        let bo = try await h.user("bo@example.com").caller
        let notes = String(repeating: "😀", count: 10_000)  // 40,000 bytes
        let first = try await h.bus.send(TodosInterface.Add(title: "one", notes: notes, dueAt: nil), as: ada).todo
        _ = try await h.bus.send(TodosInterface.Add(title: "two", notes: notes, dueAt: nil), as: ada)
        do {
            _ = try await h.bus.send(TodosInterface.Add(title: "three", notes: notes, dueAt: nil), as: ada)
            Issue.record("a third 40 KB todo passed a 100 KB quota")
        } catch let error as StorageQuotaExceeded {
            #expect(error.wireName == "io.appd.Bus.QuotaExceeded" && error.part == "todos" && error.limitBytes == 100_000)
        }
        #expect(try await h.bus.send(TodosInterface.List(filter: nil, cursor: nil, limit: 10), as: ada).todos.count == 2, "the refused add changed nothing")
        // Growing a todo past the limit is refused too; another account has its own room.
        let small = try await h.bus.send(TodosInterface.Add(title: "small", notes: String(repeating: "é", count: 7_000), dueAt: nil), as: ada).todo
        await #expect(throws: StorageQuotaExceeded.self) {
            _ = try await h.bus.send(TodosInterface.Update(id: small.id, title: nil, notes: notes, dueAt: nil, expectedVersion: nil), as: ada)
        }
        _ = try await h.bus.send(TodosInterface.Add(title: "three", notes: notes, dueAt: nil), as: bo)
        // Deleting frees its bytes.
        _ = try await h.bus.send(TodosInterface.Delete(id: first.id, expectedVersion: nil), as: ada)
        _ = try await h.bus.send(TodosInterface.Add(title: "three", notes: notes, dueAt: nil), as: ada)
    }
}
