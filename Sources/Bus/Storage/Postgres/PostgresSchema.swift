// SPDX-License-Identifier: Apache-2.0
import BusCore

/// appd's own tables on PostgreSQL: the event log with its position and horizon functions,
/// durable consumers' positions, the schema versions, and the citext extension the migrations'
/// case-insensitive columns use.
enum PostgresSchema {
    /// Where the log's positions start, and the two functions over it (see
    /// `PostgresWriteAttempt` and docs/postgres.md): a write transaction's first position, and
    /// the horizon below which every position is final (no transaction that could still commit
    /// has one). The base is set once, above every position of an older log (numbered by its
    /// identity column, as earlier versions of appd did).
    static let positions = """
        CREATE TABLE IF NOT EXISTS appd_event_base (
          one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
          base BIGINT NOT NULL
        );
        INSERT INTO appd_event_base (base) SELECT COALESCE(MAX(seq), 0) + 1 FROM appd_events ON CONFLICT DO NOTHING;
        CREATE OR REPLACE FUNCTION appd_event_position() RETURNS BIGINT LANGUAGE sql VOLATILE
          AS $$ SELECT base + (pg_current_xact_id()::text::bigint << 20) FROM appd_event_base $$;
        CREATE OR REPLACE FUNCTION appd_event_horizon() RETURNS BIGINT LANGUAGE sql STABLE
          AS $$ SELECT base + (pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20) FROM appd_event_base $$;
        """

    /// A log restored into another cluster (pg_dump): its transaction ids start again lower, so
    /// new positions would fall below old ones. The base moves up past the newest event. Run
    /// under the schema lock, before this instance writes.
    static let raiseBase = """
        UPDATE appd_event_base SET base = (SELECT MAX(seq) FROM appd_events) + 1 - (pg_current_xact_id()::text::bigint << 20)
        WHERE base + (pg_current_xact_id()::text::bigint << 20) <= (SELECT COALESCE(MAX(seq), 0) FROM appd_events)
        """

    /// How `erasureLock` holds the locks.
    enum ErasureLockMode {
        /// A batch about to log events about the owners: shared, until the transaction ends.
        case shared
        /// The erasure of an owner (`Transaction.redactEvents`): exclusive, until the transaction ends.
        case exclusive
        /// An erasure that lost a race, run again: exclusive, taken *before* its transaction
        /// begins (so its snapshot comes after every batch that held the lock) and released
        /// with `release` after the commit.
        case beforeTransaction
        case release

        var function: String {
            switch self {
            case .shared: "pg_advisory_xact_lock_shared"
            case .exclusive: "pg_advisory_xact_lock"
            case .beforeTransaction: "pg_advisory_lock"
            case .release: "pg_advisory_unlock"
            }
        }
    }

    /// Takes (or releases) the erasure locks of `owners` owners, one text parameter each.
    /// Without them SERIALIZABLE still lets no event slip past an erasure (see
    /// `PostgresDatabase.logStatements`), but the long transaction loses: under a stream of
    /// events about the owner an account deletion could fail again and again. With them the
    /// batches wait for the erasure, then run again and see the owner erased. An erasure's
    /// snapshot is taken when its first statement starts, so a batch that held the shared lock
    /// while the erasure waited commits rows the erasure cannot see, and the erasure loses once;
    /// its next attempt takes the lock before it begins (`beforeTransaction`) and cannot lose
    /// that way again.
    static func erasureLock(owners: Int, _ mode: ErasureLockMode) -> String {
        let values = Array(repeating: "(?::text)", count: owners).joined(separator: ", ")
        return
            "SELECT count(\(mode.function)(k)) AS locked FROM (SELECT DISTINCT hashtextextended(current_schema() || ' erasure ' || o, 0) AS k FROM (VALUES \(values)) AS v(o)) AS s"
    }

    static func create(on connection: PostgresConnection, namespace: PostgresNamespace) throws(StorageError) {
        do throws(StorageError) {
            try connection.control("BEGIN")
            // A lock for the whole database around creating the extension (deployments in other
            // schemas may be creating it too), then this deployment's schema lock.
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
                        message:
                            "appd needs PostgreSQL's citext extension and could not create it (\(error.message)); run `CREATE EXTENSION citext SCHEMA public` as a "
                            + "database owner or superuser"
                    )
                }
            }
            try connection.run("SELECT pg_advisory_xact_lock(?, ?)", namespace.schemaLock)
            try connection.executeScript(
                SQLDialect.postgresDDL(EventLog.schema + IdempotencyLog.schema + AccountBytes.schema) + AccountBytes.addItemsPostgres + Migrator.schema
                    + SharedRateLimits.schema + "CREATE INDEX IF NOT EXISTS appd_events_owner ON appd_events(owner);"
                    + "CREATE INDEX IF NOT EXISTS appd_events_owner_seq ON appd_events(owner, seq);" + positions)
            try connection.run(raiseBase, [])
            try connection.control("COMMIT")
        } catch {
            try? connection.control("ROLLBACK")
            throw error
        }
    }
}
