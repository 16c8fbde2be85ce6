// SPDX-License-Identifier: Apache-2.0
import BusCore

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
            try connection.executeScript(SQLDialect.postgresDDL(EventLog.schema + IdempotencyLog.schema + AccountBytes.schema) + Migrator.schema + "CREATE INDEX IF NOT EXISTS appd_events_owner ON appd_events(owner);"
                    + "CREATE INDEX IF NOT EXISTS appd_events_owner_seq ON appd_events(owner, seq);")
            try connection.control("COMMIT")
        } catch {
            try? connection.control("ROLLBACK")
            throw error
        }
    }
}
