// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore

/// `appd restore BACKUP`: puts a verified backup in place of a stopped appd's data. The current
/// database and plugin data are moved aside into `pre-restore-<time>` (never deleted); appd
/// then starts from the backup, and durable consumers resume from the cursors it holds.
public enum BackupRestore {
    /// Restores `backup` into `dataDirectory`. `known` is each plugin's newest schema version
    /// this appd knows: a backup made by a newer appd is refused. `serving` says whether an
    /// appd is running on this data directory (then nothing is touched).
    public static func restore(
        _ backup: String, into dataDirectory: String, known: [String: Int64], serving: Bool, now: WallTime = .now()
    ) throws(BackupProblem) -> (manifest: BackupManifest, setAside: String?) {
        guard !serving else {
            throw BackupProblem("an appd answers on the socket configured for \(dataDirectory); stop it first (appctl shutdown), then restore")
        }
        let manifest = try BackupVerifier.verify(backup)
        for (plugin, version) in manifest.schemaVersions.sorted(by: { $0.key < $1.key }) {
            if let newest = known[plugin], version > newest {
                throw BackupProblem(
                    "the backup has \(plugin) schema version \(version), newer than this appd knows (\(newest)): restore it with the appd that made it "
                        + "(\(manifest.appdVersion)) or a newer one"
                )
            }
        }
        try BackupFiles.makeDirectory(dataDirectory)
        let database = dataDirectory + "/" + BackupManifest.databaseFile
        let plugins = dataDirectory + "/" + BackupManifest.pluginDataFolder
        let current = [database, database + "-wal", database + "-shm", plugins].filter(BackupFiles.exists)
        var aside: String?
        if !current.isEmpty {
            let folder = dataDirectory + "/pre-restore-" + now.rfc3339.filter { $0.isNumber || $0 == "T" || $0 == "Z" }
            try BackupFiles.makeDirectory(folder)
            for path in current {
                let target = folder + "/" + (path.split(separator: "/").last.map(String.init) ?? "")
                guard rename(path, target) == 0 else { throw BackupProblem("cannot move \(path) aside to \(target): \(BackupFiles.errorText())") }
            }
            aside = folder
        }
        for file in manifest.files {
            let target = dataDirectory + "/" + file.path
            try BackupFiles.makeDirectory(FileSystem.parent(of: target))
            try BackupFiles.copy(backup + "/" + file.path, to: target)
            BackupFiles.syncDirectory(FileSystem.parent(of: target))
        }
        return (manifest, aside)
    }
}
