// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Storage

/// Where appd keeps its database when nothing says otherwise.
enum DataDirectory {
    /// Root: `/var/lib/appd`; others: `$XDG_DATA_HOME/appd`, else `~/.local/share/appd`; ""
    /// (none: the configuration asks for `--data-dir`) without a home, never a path in /tmp.
    /// (`--data-dir` and `APPD_DATA_DIR` override it through the configuration.)
    static func defaultPath() -> String {
        if getuid() == 0 { return "/var/lib/appd" }
        if let data = SocketPath.environment("XDG_DATA_HOME"), !data.isEmpty { return data + "/appd" }
        guard let home = SocketPath.environment("HOME"), !home.isEmpty else { return "" }
        return home + "/.local/share/appd"
    }

    /// Creates the directory (and its parents) owner-only when missing. An existing one must
    /// be appd's own; one that others may read is made owner-only (the database holds password
    /// hashes), one that others may write or that another user owns is refused. `searchable`
    /// (appd as root with sandboxed plugins, whose own uids must reach their data folders and
    /// sockets inside it) makes it 0711: others may pass through but not list it, and every
    /// file appd keeps in it is 0600.
    static func create(_ path: String, searchable: Bool = false) throws {
        do {
            try FileSystem.makeDirectories(path, mode: 0o700)
        } catch {
            throw StorageError(kind: .readOnly, message: "cannot create \(error.path): \(String(cString: strerror(error.code)))")
        }
        do {
            try FileSystem.checkPrivate(path, tighten: true)
        } catch {
            throw StorageError(kind: .readOnly, message: error.description)
        }
        if searchable { chmod(path, 0o711) }
    }
}
