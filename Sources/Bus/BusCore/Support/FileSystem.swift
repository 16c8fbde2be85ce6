// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small file-system helpers shared by the daemon and appctl.
public enum FileSystem {
    /// A file's bytes, or nil when it cannot be read or is over `limit` bytes.
    public static func readFile(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            out += chunk[0..<n]
            if out.count > limit { return nil }
        }
        return out
    }

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
        ([directory] + ancestors(of: directory)).enumerated().allSatisfy { index, path in
            untrustedReason(directory: path, uid: uid, allowingStickyRoot: index > 0) == nil
        }
    }

    /// Why a user other than root or `uid` could change what `directory` holds, or nil when none
    /// can. With `allowingStickyRoot`, a root-owned sticky directory (`/tmp`) is fine.
    public static func untrustedReason(directory: String, uid: uid_t = getuid(), allowingStickyRoot: Bool) -> String? {
        var info = stat()
        guard stat(directory, &info) == 0 else { return "cannot be read: \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "is not a directory" }
        guard info.st_uid == 0 || info.st_uid == uid else { return "belongs to another user (uid \(info.st_uid)), not to root or uid \(uid)" }
        let stickyRoot = allowingStickyRoot && info.st_uid == 0 && info.st_mode & S_ISVTX != 0
        guard info.st_mode & 0o022 == 0 || stickyRoot else {
            return "is writable by other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod go-w it"
        }
        return nil
    }

    /// Every directory above `path`, nearest first, ending with `/` for an absolute path.
    public static func ancestors(of path: String) -> [String] {
        var out: [String] = []
        var current = parent(of: path)
        while !current.isEmpty {
            out.append(current)
            current = parent(of: current)
        }
        if path.hasPrefix("/") && path != "/" { out.append("/") }
        return out
    }

    /// The working directory, if it can be read.
    public static func currentDirectory() -> String? {
        guard let path = getcwd(nil, 0) else { return nil }
        defer { free(path) }
        return String(cString: path)
    }

    /// The directory part of a path ("" when it has none).
    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// What a walk of a folder found: bytes on disk, entries, and whether it stopped at its
    /// entry limit (then the bytes are only a lower bound, and the folder holds too much).
    public struct Usage: Sendable, Equatable {
        public var bytes: UInt64
        public var entries: Int
        public var complete: Bool
    }

    /// Bytes the files under `path` take on disk (blocks allocated, so sparse files count for
    /// what they use), not following links nor crossing into other filesystems; stops after
    /// `limit` entries (incomplete: a folder past the limit must count as over any byte limit,
    /// or 3 GB hide behind 100,050 empty files).
    public static func usage(under path: String, limit: Int) -> Usage {
        var root = stat()
        guard lstat(path, &root) == 0 else { return Usage(bytes: 0, entries: 0, complete: true) }
        var total: UInt64 = 0
        var pending = [path]
        var seen = 0
        while let directory = pending.popLast() {
            guard let dir = opendir(directory) else { continue }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name == "." || name == ".." { continue }
                guard seen < limit else { return Usage(bytes: total, entries: seen, complete: false) }
                seen += 1
                let child = directory + "/" + name
                var info = stat()
                guard lstat(child, &info) == 0, info.st_dev == root.st_dev else { continue }
                total += UInt64(max(0, info.st_blocks)) * 512
                if info.st_mode & S_IFMT == S_IFDIR { pending.append(child) }
            }
        }
        return Usage(bytes: total, entries: seen, complete: true)
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
