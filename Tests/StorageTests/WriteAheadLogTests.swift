// SPDX-License-Identifier: Apache-2.0
import Glibc
import Testing
@testable import Storage

/// The write-ahead log keeps about one round of its file when it starts over (its blocks are
/// written over, not allocated again for every round: see `SQLiteDatabase.Options.walBytesKept`),
/// and is still cut to nothing when erased text must leave it (`reclaimErased`).
@Suite struct WriteAheadLogTests {
    func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    @Test func theWriterKeepsTheConfiguredBytesOfLogWhenItStartsOver() async throws {
        for kept in [SQLiteDatabase.Options().walBytesKept, 0, 1 << 20] {
            let dir = temporaryDirectory()
            defer { removeDirectory(dir) }
            var options = SQLiteDatabase.Options()
            options.walBytesKept = kept
            let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil, options: options)
            // A per-connection setting: the writer's is the one that cuts the file back.
            let limit = try await database.write { tx in try tx.query("PRAGMA journal_size_limit").first?.integer("journal_size_limit") }
            #expect(limit == Int64(kept))
            await database.close()
        }
        #expect(SQLiteDatabase.Options().walBytesKept == 4 << 20, "about one round of the log at the automatic checkpoint (1,000 pages)")
    }

    @Test func reclaimingErasedTextLeavesAnEmptyLogWhateverIsKept() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil)
        try await database.write { tx in try tx.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT NOT NULL)") }
        let marker = String(repeating: "erased text ", count: 200)
        for i in 0..<50 {
            try await database.write { tx in try tx.execute("INSERT INTO t (id, text) VALUES (?, ?)", [.integer(Int64(i)), .text(marker)]) }
        }
        try await database.write { tx in try tx.execute("DELETE FROM t") }
        #expect(fileSize(dir + "/appd.db-wal") > 0, "the rows went through the log")
        try await database.reclaimErased()
        #expect(fileSize(dir + "/appd.db-wal") == 0)
        await database.close()
    }
}
