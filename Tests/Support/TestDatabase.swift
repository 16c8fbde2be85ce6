// SPDX-License-Identifier: Apache-2.0
import Bus
#if canImport(Glibc)
import Glibc
#endif
import Storage
import Synchronization

/// The engine the plugin suites run on, and the PostgreSQL server the multi-instance tests use.
///
/// - `APPD_TEST_POSTGRES`: a PostgreSQL URL (`Tests/Postgres/cluster start DIR` starts a
///   throwaway server and prints one). Without it, the PostgreSQL tests are skipped.
/// - `APPD_TEST_ENGINE=postgres`: the plugin harness (every plugin suite) runs on that server,
///   each harness in a fresh schema, instead of a SQLite file.
public enum TestDatabase {
    public static let postgresURL: String? = getenv("APPD_TEST_POSTGRES").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }

    public static let engine: SQLDialect = getenv("APPD_TEST_ENGINE").map { String(cString: $0) } == "postgres" ? .postgres : .sqlite

    /// Where schemas are created (connecting blocks; not on a Swift concurrency thread).
    public static let pool = BlockingPool(name: "test-pg", threads: 4, queueLimit: 1024)

    /// Whether the PostgreSQL tests can run (a test's `.enabled(if:)`).
    public static var hasPostgres: Bool { postgresURL != nil }

    /// The one line that says what was skipped and how to run it.
    public static let skipped = "PostgreSQL tests skipped: to run them, export APPD_TEST_POSTGRES=$(Tests/Postgres/cluster start /tmp/appd-pg)"

    /// A URL to a schema on the test server (one deployment's worth of tables): a fresh one, or
    /// the one named after `key` (the same key reopens the same schema, as a restart would).
    /// Every schema made here is dropped when the test process exits — not when its test ends:
    /// a `DROP SCHEMA … CASCADE` is a transaction with an id that can take seconds on a loaded
    /// machine, and while it runs it holds back the server's event horizon for every other test
    /// (`appd_event_horizon()` is the whole server's), whose events then wait that long.
    public static func postgres(key: String? = nil) throws -> String {
        guard let url = postgresURL else { throw HarnessError(skipped) }
        let schema = "appd_t_" + (key.map { String(fnv1a($0), radix: 36) } ?? String(UInt64.random(in: 1...UInt64.max), radix: 36))
        try PostgresURL.createSchema(schema, at: url)
        droppedAtExit.withLock { if !$0.contains(where: { $0.schema == schema }) { $0.append((schema, url)) } }
        return PostgresURL.url(url, schema: schema)
    }

    /// The schemas made, dropped by `dropSchemasAtExit` (installed once, with the first).
    private static let droppedAtExit: Mutex<[(schema: String, url: String)]> = {
        atexit { TestDatabase.dropSchemasAtExit() }
        return Mutex([])
    }()

    private static func dropSchemasAtExit() {
        for (schema, url) in droppedAtExit.withLock({ $0 }) { try? PostgresURL.dropSchema(schema, at: url) }
    }

    private static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// A database of the engine under test: a SQLite file at `path`, or the PostgreSQL schema
    /// that stands for that path.
    public static func open(path: String, outbox: EventOutbox?) async throws -> any Database {
        switch engine {
        case .sqlite: return try SQLiteDatabase(path: path, outbox: outbox)
        case .postgres:
            guard postgresURL != nil else { throw HarnessError("APPD_TEST_ENGINE=postgres needs APPD_TEST_POSTGRES (a server URL)") }
            var options = PostgresDatabase.Options()
            options.readers = 1  // hundreds of harnesses share the test server's connections
            let url = try await pool.run { try postgres(key: path) }
            return try await PostgresDatabase.open(url: url, outbox: outbox, options: options)
        }
    }
}
