// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import Storage

/// Durable writes per second with `writers` concurrent writers (each write is one row plus
/// its event, acknowledged after a `synchronous=FULL` commit). One writer pays one fsync per
/// write; many writers share commits (group commit).
func durableWrites(writers: Int, writes: Int) async throws -> Double {
    var template = Array("/tmp/appd-bench-XXXXXX".utf8CString)
    let dir = mkdtemp(&template).map { String(cString: $0) } ?? "/tmp"
    defer {
        for name in ["appd.db", "appd.db-wal", "appd.db-shm"] { unlink(dir + "/" + name) }
        rmdir(dir)
    }
    let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: nil, logger: Logger(label: "bench", level: .error))
    try await Migrator.migrate(database, [Migration(plugin: "bench", version: 1, sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER)")])
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for w in 0..<writers {
            group.addTask {
                for i in 0..<(writes / writers) {
                    try await database.write { transaction in
                        try transaction.execute("INSERT INTO items (n) VALUES (?)", [.integer(Int64(w * writes + i))])
                        try transaction.append(BenchItem(n: i), causedBy: nil)
                    }
                }
            }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - start
    await database.close()
    return Double(writes) / seconds(elapsed)
}

/// The event each benchmark write logs.
struct BenchItem: Event {
    static let topic = "bench.item"
    static let audience = EventAudience.admin
    var n: Int
}
