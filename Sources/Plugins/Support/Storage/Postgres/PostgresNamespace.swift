import Bus

/// What identifies one appd deployment inside a PostgreSQL database: the schema its tables
/// live in (the first of the connection's `search_path`). The advisory locks and the NOTIFY
/// channel are derived from it, so two deployments in one database (or the tests, a schema
/// each) never share a lock or a channel.
struct PostgresNamespace: Sendable {
    let schema: String
    /// The first key of every advisory lock of this deployment.
    let key: Int64

    init(_ connection: PostgresConnection) throws(StorageError) {
        let row = try connection.run("SELECT current_schema() AS s, hashtext(current_schema()) AS k", []).rows.first
        guard let schema = row?.text("s"), let key = row?.integer("k") else {
            throw StorageError(
                kind: .other,
                message: "the connection has no schema to create appd's tables in: create the schema named first in search_path, or set search_path (e.g. ?options=-csearch_path%3Dappd)")
        }
        self.schema = schema
        self.key = key
    }

    /// `pg_advisory_xact_lock(?, ?)`'s parameters for the write lock.
    var writeLock: [SQLValue] { [.integer(key), .integer(1)] }

    /// The channel every instance LISTENs on for committed events.
    var channel: String { "appd_events." + schema }

    /// The channel as a quoted identifier, for LISTEN.
    var quotedChannel: String { "\"" + channel.replacing("\"", with: "\"\"") + "\"" }
}

/// appd's own tables on PostgreSQL: the event log, durable consumers' positions, the schema
/// versions, and the citext extension the migrations' case-insensitive columns use.
enum PostgresSchema {
    static func create(on connection: PostgresConnection, namespace: PostgresNamespace) throws(StorageError) {
        do throws(StorageError) {
            try connection.control("BEGIN")
            // A lock for the whole database around creating the extension (deployments in other
            // schemas may be creating it too), then this deployment's write lock.
            let citext = "SELECT 1 FROM pg_extension WHERE extname = 'citext'"
            if try connection.run(citext, []).rows.isEmpty {
                try connection.run("SELECT pg_advisory_xact_lock(?, ?)", [.integer(0x6170_7064), .integer(0)])
            }
            if try connection.run(citext, []).rows.isEmpty {
                do {
                    try connection.control("CREATE EXTENSION citext SCHEMA public")
                } catch {
                    throw StorageError(
                        kind: error.kind,
                        message: "appd needs PostgreSQL's citext extension and could not create it (\(error.message)); run `CREATE EXTENSION citext SCHEMA public` as a database owner or superuser")
                }
            }
            try connection.run("SELECT pg_advisory_xact_lock(?, ?)", namespace.writeLock)
            try connection.executeScript(SQLDialect.postgresDDL(EventLog.schema) + Migrator.schema + "CREATE INDEX IF NOT EXISTS appd_events_owner ON appd_events(owner);")
            try connection.control("COMMIT")
        } catch {
            try? connection.control("ROLLBACK")
            throw error
        }
    }
}

/// The database URL as operators give it (`postgres://user:password@host:port/db?…`, or a
/// libpq `key=value` string), and its form without the password.
public enum PostgresURL {
    /// Whether `value` names a PostgreSQL database rather than a SQLite file.
    public static func isPostgres(_ value: String) -> Bool {
        value.hasPrefix("postgres://") || value.hasPrefix("postgresql://") || value.contains("dbname=") || value.contains("host=")
    }

    /// The password (in the URL's user info, or a `password=` key) replaced by `***`.
    public static func redacted(_ value: String) -> String {
        if let scheme = value.firstRange(of: "://") {
            let rest = value[scheme.upperBound...]
            guard let at = rest.firstIndex(of: "@") else { return value }
            let userInfo = rest[..<at]
            guard let colon = userInfo.firstIndex(of: ":") else { return value }
            return String(value[..<scheme.upperBound]) + userInfo[..<colon] + ":***" + rest[at...]
        }
        // key=value form: hide password=… up to the next space.
        var words = value.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        for i in words.indices where words[i].hasPrefix("password=") { words[i] = "password=***" }
        return words.joined(separator: " ")
    }
}

extension PostgresURL {
    /// `url` with `search_path` set to `schema` (then `public`, where the citext type lives):
    /// one database can hold several deployments, a schema each.
    public static func url(_ url: String, schema: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)%2Cpublic"
    }

    /// Creates `schema` in the database at `url` unless it exists (blocks: call it from a
    /// thread that may wait, or through `PostgresDatabase.open`'s kind of pool).
    public static func createSchema(_ schema: String, at url: String) throws {
        let connection = try PostgresConnection(conninfo: url, setup: "SET client_min_messages = warning")
        try connection.executeScript("CREATE SCHEMA IF NOT EXISTS \"\(schema.replacing("\"", with: "\"\""))\"")
    }
}
