// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Storage

/// Online backups of a SQLite appd: a folder `appd-backup-<UTC time>` holding a consistent copy
/// of the database (`VACUUM INTO`, taken while appd serves), a copy of the external plugins'
/// data folders, and `manifest.json` (written last, with every file's SHA-256). It is built as
/// `.appd-backup-<time>.partial` and renamed only when complete and synced, so a crash leaves
/// nothing `verify` accepts.
public struct Backups: Sendable {
    /// Where backups are made and listed.
    public let directory: String
    /// The data directory they are taken from (its `plugin-data`).
    public let dataDirectory: String
    public let database: any Database

    public init(directory: String, dataDirectory: String, database: any Database) {
        self.directory = directory
        self.dataDirectory = dataDirectory
        self.database = database
    }

    static let prefix = "appd-backup-"

    /// Makes one backup; returns its folder and manifest.
    public func create(now: WallTime = .now()) async throws -> (path: String, manifest: BackupManifest) {
        try prepareDirectory()
        let stamp = now.rfc3339.filter { $0.isNumber || $0 == "T" || $0 == "Z" }
        let name = Self.prefix + stamp
        let partial = directory + "/." + name + ".partial"
        let final = directory + "/" + name
        guard !BackupFiles.exists(final), !BackupFiles.exists(partial) else { throw BackupProblem("a backup named \(name) is already there or being made") }
        try BackupFiles.makeDirectory(partial)
        do {
            try await database.backup(into: partial + "/" + BackupManifest.databaseFile)
            let plugins = try PluginDataCopy.copy(
                dataDirectory + "/" + BackupManifest.pluginDataFolder, into: partial + "/" + BackupManifest.pluginDataFolder)
            let inspection = try SQLiteFileInspection.inspect(partial + "/" + BackupManifest.databaseFile)
            var files: [BackupManifest.File] = []
            for file in BackupFiles.files(under: partial) {
                files.append(.init(path: file, bytes: BackupFiles.size(partial + "/" + file), sha256: try BackupFiles.sha256(partial + "/" + file)))
            }
            let manifest = BackupManifest(
                appdVersion: Version.current, createdAt: now.rfc3339, lastSequence: inspection.lastSequence, schemaVersions: inspection.schemaVersions,
                files: files, skipped: plugins.skipped.isEmpty ? nil : plugins.skipped)
            try writeManifest(manifest, to: partial + "/" + BackupManifest.fileName)
            syncTree(partial)
            guard rename(partial, final) == 0 else { throw BackupProblem("cannot rename \(partial) to \(final): \(BackupFiles.errorText())") }
            BackupFiles.syncDirectory(directory)
            return (final, manifest)
        } catch {
            BackupFiles.remove(partial)
            throw error
        }
    }

    /// Creates the backup directory owner-only when missing, and checks it as the data directory
    /// is checked: appd's own (or root's), not writable by others, and no folder above it that
    /// another user could change (who owns the parent can swap the directory: remove backups
    /// or plant one that `verify` accepts and `restore` restores). Security review 2, finding 8.
    public func prepareDirectory() throws(BackupProblem) {
        try BackupFiles.makeDirectory(directory)
        do { try FileSystem.checkPrivate(directory, tighten: true) } catch { throw BackupProblem(error.description) }
        for (index, folder) in ([directory] + FileSystem.ancestors(of: directory)).enumerated() {
            if let reason = FileSystem.untrustedReason(directory: folder, allowingStickyRoot: index > 0) {
                throw BackupProblem("refusing to keep backups in \(directory): \(folder) \(reason); choose a backupDirectory only root and appd's user control")
            }
        }
    }

    /// The backups in the folder, oldest first (partial ones are not backups).
    public func list() -> [String] {
        Self.list(directory)
    }

    static func list(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(prefix) { names.append(directory + "/" + name) }
        }
        return names.sorted()
    }

    /// The newest finished backup in the directory (one whose manifest reads), and when it
    /// was made; nil when there is none. Its files are not checked here (that is Verify).
    public func newestOnDisk() -> (path: String, createdAt: String)? {
        for path in list().reversed() where !path.hasSuffix(".partial") {
            guard let bytes = FileSystem.readFile(path + "/" + BackupManifest.fileName, limit: 16 << 20),
                let manifest = try? JSONParser.parse(bytes).decode(as: BackupManifest.self)
            else { continue }
            return (path, manifest.createdAt)
        }
        return nil
    }

    /// Keeps the newest `keep` backups; removes older ones and partial ones left by a crash
    /// (none is being made: the caller makes one at a time). Returns what it removed.
    @discardableResult
    public func prune(keep: Int) -> [String] {
        let all = list()
        var removed = Array(all.dropLast(max(0, keep)))
        if let handle = opendir(directory) {
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix("." + Self.prefix) && name.hasSuffix(".partial") { removed.append(directory + "/" + name) }
            }
            closedir(handle)
        }
        for path in removed { BackupFiles.remove(path) }
        return removed
    }

    private func writeManifest(_ manifest: BackupManifest, to path: String) throws(BackupProblem) {
        let json: JSONValue
        do { json = try JSONValue(encoding: manifest) } catch { throw BackupProblem("cannot encode the manifest: \(error)") }
        let bytes = Array(JSONWriter.pretty(json).utf8) + [10]
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BackupProblem("cannot create \(path): \(BackupFiles.errorText())") }
        defer { close(fd) }
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count, fsync(fd) == 0 else {
            throw BackupProblem("cannot write \(path): \(BackupFiles.errorText())")
        }
    }

    private func syncTree(_ root: String) {
        for file in BackupFiles.files(under: root) {
            let fd = open(root + "/" + file, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { _ = fsync(fd); close(fd) }
        }
        BackupFiles.syncDirectory(root)
    }
}
