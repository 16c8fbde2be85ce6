// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Backups
import Bus
import CSystem
import PluginKit

/// `appd restore BACKUP`: the offline half of backups (the online half is io.appd.Backup).
extension Appd {
    /// Restores into the configured data directory; returns the exit code.
    static func restore(_ backup: String, config: AppdConfig) -> Int32 {
        guard config.database == nil else {
            printError("Error: appd restores SQLite data directories; restore a PostgreSQL database with the server's own tools (pg_restore)")
            return 64
        }
        // The newest schema each plugin of this appd knows: a backup from a newer appd is refused.
        var known: [String: Int64] = [:]
        for plugin in installedPlugins(config) {
            for migration in plugin.migrations { known[migration.plugin] = max(known[migration.plugin] ?? 0, Int64(migration.version)) }
        }
        // An appd answering on the configured socket is serving this data directory.
        let probe = appd_unix_connect(config.socket)
        let serving = probe >= 0
        if serving { close(probe) }
        do {
            let (manifest, aside) = try BackupRestore.restore(backup, into: config.dataDirectory, known: known, serving: serving)
            print("restored \(backup) (made \(manifest.createdAt) by appd \(manifest.appdVersion), event log at \(manifest.lastSequence)) into \(config.dataDirectory)")
            if let aside { print("the data that was there is kept in \(aside)") }
            print("start appd to serve it")
            return 0
        } catch {
            printError("Error: \(error)")
            return serving ? 69 : 65
        }
    }
}
