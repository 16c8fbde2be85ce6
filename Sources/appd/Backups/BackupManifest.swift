// SPDX-License-Identifier: Apache-2.0
import BusCore

/// What a backup holds, written last as `manifest.json`: the appd that made it, the schema
/// versions and the event log's last sequence in its database, when it was made, and each
/// file with its size and SHA-256.
public struct BackupManifest: Codable, Sendable, Equatable {
    public struct File: Codable, Sendable, Equatable {
        /// Relative to the backup's folder.
        public var path: String
        public var bytes: Int64
        public var sha256: String
    }

    /// The layout's version (1).
    public var format = 1
    public var appdVersion: String
    public var createdAt: String
    public var lastSequence: Int64
    /// Each plugin's schema version in the backed-up database.
    public var schemaVersions: [String: Int64]
    public var files: [File]
    /// What of the plugins' data folders was left out, as "path: why" (a symbolic link, a file
    /// that vanished while the backup was made); absent when nothing was.
    public var skipped: [String]? = nil

    public static let fileName = "manifest.json"
    /// The database inside a backup.
    public static let databaseFile = "appd.db"
    /// External plugins' data folders inside a backup.
    public static let pluginDataFolder = "plugin-data"
}

/// A backup cannot be made, or is not one that may be restored; says what is wrong.
/// (`io.appd.Backup` answers it as `BackupError.backupFailed`.)
public struct BackupProblem: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
