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

    /// Checks that `path` is a directory only its owner controls: a real directory (not a
    /// link), owned by `uid` (or root), and not writable by group or other. With `tighten`, a
    /// directory that is merely readable by others is made owner-only (0700) instead of refused.
    /// Another local user who could plant or swap files in it could otherwise capture
    /// passwords (a fake socket) or move data (a planted config).
    public static func checkPrivate(_ path: String, uid: uid_t = getuid(), tighten: Bool = false) throws(UnsafeDirectory) {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw UnsafeDirectory(path: path, reason: "cannot be read (\(String(cString: strerror(errno))))") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw UnsafeDirectory(path: path, reason: "is not a directory (or is a symbolic link)") }
        guard info.st_uid == uid || info.st_uid == 0 else {
            throw UnsafeDirectory(path: path, reason: "belongs to uid \(info.st_uid), not to uid \(uid) that appd runs as")
        }
        let loose = info.st_mode & (tighten ? 0o077 : 0o022)
        guard loose != 0 else { return }
        guard tighten, info.st_uid == uid, chmod(path, 0o700) == 0 else {
            throw UnsafeDirectory(path: path, reason: "is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8)))")
        }
    }

    /// Whether only root or `uid` can decide what `directory` holds: it and every directory
    /// above it are owned by root or `uid`, and none is writable by others — except that a
    /// root-owned sticky directory (`/tmp`) above it is fine, since nobody can rename what
    /// others put in it. A socket in such a directory was put there by root or by `uid`.
    public static func isTrusted(directory: String, uid: uid_t = getuid()) -> Bool {
        var current = directory
        var first = true
        while !current.isEmpty {
            var info = stat()
            guard stat(current, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == 0 || info.st_uid == uid else { return false }
            let stickyRoot = !first && info.st_uid == 0 && info.st_mode & S_ISVTX != 0
            guard info.st_mode & 0o022 == 0 || stickyRoot else { return false }
            if current == "/" { return true }
            first = false
            let parent = parent(of: current)
            current = parent.isEmpty && current.hasPrefix("/") ? "/" : parent
        }
        return false
    }

    /// The working directory, if it can be read.
    public static func currentDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(cString: buffer)
    }

    /// The directory part of a path ("" when it has none).
    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}

/// A directory other users could tamper with; says which and what to do.
public struct UnsafeDirectory: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let reason: String
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
    public var description: String {
        "refusing to use \(path): it \(reason); make it yours and private (chown, chmod 700) or choose another path"
    }
}
