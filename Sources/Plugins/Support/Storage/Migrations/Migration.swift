import Bus

/// One versioned schema change of one plugin.
public struct Migration: Sendable {
    public let plugin: String
    public let version: Int
    public let sql: String

    public init(plugin: String, version: Int, sql: String) {
        self.plugin = plugin
        self.version = version
        self.sql = sql
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
    /// own, so a failure leaves the database at the last good version.
    public static func migrate(_ database: any Database, _ migrations: [Migration]) async throws {
        try await database.write { transaction in try transaction.execute(schema) }
        let byPlugin = Dictionary(grouping: migrations, by: \.plugin)
        for (plugin, list) in byPlugin.sorted(by: { $0.key < $1.key }) {
            let sorted = list.sorted { $0.version < $1.version }
            let known = sorted.last?.version ?? 0
            let current = try await version(of: plugin, in: database)
            if current > known {
                throw StorageError(
                    kind: .newerSchema,
                    message: "the database has \(plugin) schema version \(current), but this appd knows only up to \(known); run a newer appd or restore a backup")
            }
            for migration in sorted where migration.version > current {
                try await database.write { transaction in
                    for statement in split(migration.sql) { try transaction.execute(statement) }
                    try transaction.execute(
                        "INSERT INTO appd_schema (plugin, version) VALUES (?, ?) ON CONFLICT(plugin) DO UPDATE SET version = excluded.version",
                        [.text(plugin), .integer(Int64(migration.version))])
                }
            }
        }
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
