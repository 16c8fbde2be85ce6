// SPDX-License-Identifier: Apache-2.0
import BusCore

/// What a SQLite database file holds, read without changing it (opened read-only): its
/// integrity, each plugin's schema version and the event log's last sequence. For backups.
public struct SQLiteFileInspection: Sendable, Equatable {
    /// `PRAGMA integrity_check`: "ok", or the first problems it found.
    public var integrity: String
    public var schemaVersions: [String: Int64]
    public var lastSequence: Int64

    public static func inspect(_ path: String) throws(StorageError) -> SQLiteFileInspection {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 1000, readOnly: true)
        let integrity = try connection.run("PRAGMA integrity_check", []).compactMap { $0.text("integrity_check") }.joined(separator: "; ")
        var versions: [String: Int64] = [:]
        for row in try connection.run("SELECT plugin, version FROM appd_schema", []) {
            if let plugin = row.text("plugin"), let version = row.integer("version") { versions[plugin] = version }
        }
        let last = try connection.run("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events", []).first?.integer("seq") ?? 0
        return SQLiteFileInspection(integrity: integrity, schemaVersions: versions, lastSequence: last)
    }
}
