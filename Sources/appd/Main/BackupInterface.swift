import Backups
import Bus

/// `io.appd.Backup`: online backups of a SQLite appd, for admins (`appctl backup create`,
/// `list`, `verify --path …`). Restoring is `appd restore BACKUP` with appd stopped.
enum BackupInterface {
    static let idl = """
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
        # database's integrity and that it holds what the manifest says.
        method Verify(path: string) -> (backup: Backup)

        # The backup could not be made, or is not one that may be restored; the reason says why.
        error BackupFailed (reason: string)
        """

    struct Summary: Codable, Sendable {
        var path: String
        var createdAt: String
        var appdVersion: String
        var lastSeq: Int64
        var schemaVersions: [String: Int64]
        var bytes: Int64

        init(_ path: String, _ manifest: BackupManifest) {
            self.path = path
            createdAt = manifest.createdAt
            appdVersion = manifest.appdVersion
            lastSeq = manifest.lastSequence
            schemaVersions = manifest.schemaVersions
            bytes = manifest.files.reduce(0) { $0 + $1.bytes }
        }
    }
    struct BackupReply: Codable, Sendable { var backup: Summary }

    struct Create: Command {
        static let method = "io.appd.Backup.Create"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = BackupReply
    }
    struct List: Command {
        static let method = "io.appd.Backup.List"
        static let requirements: [Requirement] = [.admin]
        struct Reply: Codable, Sendable {
            var directory: String
            var backups: [String]
        }
    }
    struct Verify: Command {
        static let method = "io.appd.Backup.Verify"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = BackupReply
        var path: String
    }

    static func install(on dispatcher: VarlinkDispatcher, service: BackupService, backups: Backups) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Create.self) { _, _ in
            do {
                let made = try await service.backUp(scheduled: false)
                return .init(backup: Summary(made.path, made.manifest))
            } catch let problem as BackupProblem {
                throw problem
            } catch {
                throw BackupProblem("\(error)")
            }
        }
        try bus.register(List.self) { _, _ in .init(directory: backups.directory, backups: backups.list()) }
        try bus.register(Verify.self) { command, _ in
            let manifest = try BackupVerifier.verify(command.path)
            return .init(backup: Summary(command.path, manifest))
        }
    }
}
