#if canImport(Glibc)
import Glibc
#endif
import Bus
import Storage

/// Where appd keeps its database when nothing says otherwise.
enum DataDirectory {
    /// Root: `/var/lib/appd`; others: `$XDG_DATA_HOME/appd`, else `~/.local/share/appd`.
    /// (`--data-dir` and `APPD_DATA_DIR` override it through the configuration.)
    static func defaultPath() -> String {
        if getuid() == 0 { return "/var/lib/appd" }
        if let data = SocketPath.environment("XDG_DATA_HOME"), !data.isEmpty { return data + "/appd" }
        let home = SocketPath.environment("HOME") ?? "/tmp"
        return home + "/.local/share/appd"
    }

    /// Creates the directory (and its parents) owner-only when missing.
    static func create(_ path: String) throws {
        do {
            try FileSystem.makeDirectories(path, mode: 0o700)
        } catch {
            throw StorageError(kind: .readOnly, message: "cannot create \(error.path): \(String(cString: strerror(error.code)))")
        }
    }
}
