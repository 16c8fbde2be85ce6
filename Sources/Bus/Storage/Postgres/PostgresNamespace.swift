// SPDX-License-Identifier: Apache-2.0
import BusCore

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
                message:
                    "the connection has no schema to create appd's tables in: create the schema named first in search_path, or set search_path (e.g. ?options=-csearch_path%3Dappd)"
            )
        }
        self.schema = schema
        self.key = key
    }

    /// `pg_advisory_xact_lock(?, ?)`'s parameters for the lock held while appd's own tables
    /// are created or brought up to date (instances starting together take turns).
    var schemaLock: [SQLValue] { [.integer(key), .integer(1)] }

    /// `pg_advisory_lock(?, ?)`'s parameters for the lock write batches that keep conflicting
    /// take turns under (see `PostgresDatabase.escalateAt`).
    var escalationLock: [SQLValue] { [.integer(key), .integer(2)] }

    /// The channel every instance LISTENs on for committed events.
    var channel: String { "appd_events." + schema }

    /// The channel every instance LISTENs on for `DeploymentSignals`.
    var signalChannel: String { "appd_signals." + schema }

    /// The channel as a quoted identifier, for LISTEN.
    var quotedChannel: String { Self.quoted(channel) }

    var quotedSignalChannel: String { Self.quoted(signalChannel) }

    private static func quoted(_ identifier: String) -> String { "\"" + identifier.replacing("\"", with: "\"\"") + "\"" }
}
