#if canImport(Glibc)
import Glibc
#endif

/// Small file-system helpers shared by the daemon and appctl.
public enum FileSystem {
    /// Creates `path` and any missing parents with `mode` (existing ones are left as they are),
    /// like `mkdir -p`. Throws the failing directory and errno.
    public static func makeDirectories(_ path: String, mode: mode_t) throws(SocketError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                throw SocketError(operation: "mkdir", path: prefix, code: errno)
            }
        }
    }

    /// The directory part of a path ("" when it has none).
    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}
