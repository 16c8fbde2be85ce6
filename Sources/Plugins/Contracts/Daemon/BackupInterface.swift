// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Backup`: online backups of a SQLite appd, for admins (`appctl backup create`,
/// `list`, `verify --path …`). Restoring is `appd restore BACKUP` with appd stopped.
public enum BackupInterface {
    public static let idl = """
        # Online backups: a consistent copy of the database and the external plugins' data,
        # made while appd serves, with a manifest of SHA-256 sums. Admin only. Restore one with
        # 'appd restore BACKUP' while appd is stopped. SQLite only: back up PostgreSQL with the
        # server's own tools.
        interface io.appd.Backup

        # One backup: its folder and what its manifest says.
        type Backup (
          path: string,
          createdAt: string,
          appdVersion: string,
          # The event log's last sequence number in it.
          lastSeq: int,
          # Each plugin's schema version in it.
          schemaVersions: [string]int,
          bytes: int
        )

        # Makes a backup now, in the backup directory (backupDirectory).
        method Create() -> (backup: Backup)

        # The backups in the backup directory, oldest first (unverified: see Verify).
        method List() -> (directory: string, backups: []string)

        # Checks a backup: every file against its SHA-256, nothing missing or extra, the
        # database's integrity and that it holds what the manifest says. files: how many were
        # checked; integrity: SQLite's integrity_check of its database ("ok").
        method Verify(path: string) -> (backup: Backup, files: int, integrity: string)

        # The backup could not be made, or is not one that may be restored; the reason says why.
        # category: invalid
        error BackupFailed (reason: string)
        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [Create.self, List.self, Verify.self]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = BackupError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }

    public struct Summary: Codable, Sendable {
        public var path: String
        public var createdAt: String
        public var appdVersion: String
        public var lastSeq: Int64
        public var schemaVersions: [String: Int64]
        public var bytes: Int64
        public init(path: String, createdAt: String, appdVersion: String, lastSeq: Int64, schemaVersions: [String: Int64], bytes: Int64) {
            self.path = path
            self.createdAt = createdAt
            self.appdVersion = appdVersion
            self.lastSeq = lastSeq
            self.schemaVersions = schemaVersions
            self.bytes = bytes
        }
    }
    public struct BackupReply: Codable, Sendable {
        public var backup: Summary
        public init(backup: Summary) {
            self.backup = backup
        }
    }

    public struct Create: Command {
        public static let method = "io.appd.Backup.Create"
        public static let requirements: [Requirement] = [.admin]
        public typealias Reply = BackupReply
        public init() {}
    }
    public struct List: Command {
        public static let method = "io.appd.Backup.List"
        public static let requirements: [Requirement] = [.admin]
        public struct Reply: Codable, Sendable {
            public var directory: String
            public var backups: [String]
            public init(directory: String, backups: [String]) {
                self.directory = directory
                self.backups = backups
            }
        }
        public init() {}
    }
    public struct Verify: Command {
        public static let method = "io.appd.Backup.Verify"
        public static let requirements: [Requirement] = [.admin]
        public struct Reply: Codable, Sendable {
            public var backup: Summary
            public var files: Int
            public var integrity: String
            public init(backup: Summary, files: Int, integrity: String) {
                self.backup = backup
                self.files = files
                self.integrity = integrity
            }
        }
        public var path: String
        public init(path: String) {
            self.path = path
        }
    }

}

/// The typed errors of `io.appd.Backup`.
public enum BackupError: InterfaceError {
    public static let interface = "io.appd.Backup"

    /// The backup cannot be made, or is not one that may be restored: what is wrong.
    case backupFailed(reason: String)

    public var description: String {
        switch self {
        case .backupFailed(let reason): reason
        }
    }
}
