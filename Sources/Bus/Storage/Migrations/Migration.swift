// SPDX-License-Identifier: Apache-2.0
import BusCore

/// One versioned schema change of one plugin. `sql` is written for SQLite; on PostgreSQL its
/// column types are translated (`SQLDialect.postgresDDL`), or `postgres` gives the text
/// outright where a translation would not do.
public struct Migration: Sendable {
    public let plugin: String
    public let version: Int
    public let sql: String
    public let postgres: String?

    public init(plugin: String, version: Int, sql: String, postgres: String? = nil) {
        self.plugin = plugin
        self.version = version
        self.sql = sql
        self.postgres = postgres
    }

    /// The text to run on `dialect`.
    public func text(for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sql
        case .postgres: postgres ?? SQLDialect.postgresDDL(sql)
        }
    }
}

/// Applies each plugin's migrations in version order, recording the version reached in the
/// database; refuses a database whose schema is newer than this appd knows.
public enum Migrator {
    static let schema = """
        CREATE TABLE IF NOT EXISTS appd_schema (
          plugin TEXT PRIMARY KEY,
          version INTEGER NOT NULL
        );
        """

    /// Brings every plugin's schema up to its newest migration. Each migration commits on its
    /// own, so a failure leaves the database at the last good version. Instances starting at
    /// once take turns (the `appd.migrations` lease: on PostgreSQL a lock held across the
    /// instance's migrations, taken before their transactions begin, so each reads the versions
    /// the one before it left); the version is read in the same write that applies the migration.
    public static func migrate(_ database: any Database, _ migrations: [Migration]) async throws {
        try await database.holdingLease("appd.migrations") {
            try await apply(migrations, to: database)
        }
    }

    private static func apply(_ migrations: [Migration], to database: any Database) async throws {
        try await database.write { transaction in try transaction.execute(schema) }
        let byPlugin = Dictionary(grouping: migrations, by: \.plugin)
        for (plugin, list) in byPlugin.sorted(by: { $0.key < $1.key }) {
            let sorted = list.sorted { $0.version < $1.version }
            let known = sorted.last?.version ?? 0
            for migration in sorted {
                try await database.write { transaction in
                    let current = try version(of: plugin, in: transaction)
                    if current > known {
                        throw StorageError(
                            kind: .newerSchema,
                            message: "the database has \(plugin) schema version \(current), but this appd knows only up to \(known); run a newer appd or restore a backup")
                    }
                    guard current < migration.version else { return }
                    for statement in split(migration.text(for: transaction.dialect)) { try transaction.execute(statement) }
                    try transaction.execute(
                        "INSERT INTO appd_schema (plugin, version) VALUES (?, ?) ON CONFLICT(plugin) DO UPDATE SET version = excluded.version",
                        [.text(plugin), .integer(Int64(migration.version))])
                }
            }
        }
    }

    static func version(of plugin: String, in transaction: any Transaction) throws -> Int {
        Int(try transaction.query("SELECT version FROM appd_schema WHERE plugin = ?", [.text(plugin)]).first?.integer("version") ?? 0)
    }

    /// The schema version a plugin has in the database (0 when it has none).
    public static func version(of plugin: String, in database: any Database) async throws -> Int {
        try await database.read { transaction in
            let rows = try transaction.query("SELECT version FROM appd_schema WHERE plugin = ?", [.text(plugin)])
            return Int(rows.first?.integer("version") ?? 0)
        }
    }

    /// Splits migration SQL into statements at semicolons outside quotes.
    static func split(_ sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        var quote: Character?
        for ch in sql {
            if let q = quote {
                if ch == q { quote = nil }
            } else if ch == "'" || ch == "\"" {
                quote = ch
            } else if ch == ";" {
                let trimmed = current.trimmingWhitespace()
                if !trimmed.isEmpty { statements.append(trimmed) }
                current = ""
                continue
            }
            current.append(ch)
        }
        let trimmed = current.trimmingWhitespace()
        if !trimmed.isEmpty { statements.append(trimmed) }
        return statements
    }
}
