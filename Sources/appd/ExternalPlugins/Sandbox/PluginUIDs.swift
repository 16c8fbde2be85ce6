// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Synchronization

/// The uid each plugin runs as when appd runs as root: one of its own from the configured
/// range, never root and never a uid /etc/passwd names, kept in a file so that a plugin keeps
/// its uid (and owns its data folder) across restarts of appd.
final class PluginUIDs: Sendable {
    let file: String
    let range: ClosedRange<UInt32>
    private let assigned: Mutex<[String: UInt32]>

    init(file: String, range: ClosedRange<UInt32>) {
        self.file = file
        self.range = range
        var table: [String: UInt32] = [:]
        if let bytes = PluginDirectoryScanner.readFile(file, limit: 1 << 20), let object = (try? JSONParser.parse(bytes))?.objectValue {
            for (name, value) in object {
                if case .int(let uid) = value, let uid = UInt32(exactly: uid), range.contains(uid) { table[name] = uid }
            }
        }
        assigned = Mutex(table)
    }

    /// The plugin's uid (assigned and saved on first use), or nil when the range is used up.
    func uid(for plugin: String) -> UInt32? {
        let (uid, changed) = assigned.withLock { table -> (UInt32?, Bool) in
            if let uid = table[plugin] { return (uid, false) }
            let taken = Set(table.values)
            // Start at a slot derived from the name, so the same plugin tends to get the
            // same uid on other machines too.
            let count = UInt64(range.upperBound - range.lowerBound) + 1
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in plugin.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            for step in 0..<count {
                let uid = range.lowerBound + UInt32((hash &+ step) % count)
                guard uid != 0, !taken.contains(uid), getpwuid(uid) == nil, getgrgid(uid) == nil else { continue }
                table[plugin] = uid
                return (uid, true)
            }
            return (nil, false)
        }
        if changed { save() }
        return uid
    }

    private func save() {
        let table = assigned.withLock { $0 }
        let bytes = JSONWriter.bytes(.object(table.mapValues { .int(Int64($0)) }))
        let temporary = file + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        FileDescriptorWriter.writeAll(fd, bytes)
        fsync(fd)
        close(fd)
        rename(temporary, file)
    }

    /// Makes `path` and everything in it belong to `uid` (a plugin's data folder, which may
    /// hold files from before it had a uid of its own). Symbolic links are not followed.
    static func own(_ path: String, uid: UInt32) throws(PluginStartError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw PluginStartError("cannot read its data folder \(path): \(String(cString: strerror(errno)))") }
        guard info.st_uid != uid || info.st_gid != uid else { return }
        guard lchown(path, uid, uid) == 0 else { throw PluginStartError("cannot give its data folder \(path) to uid \(uid): \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFDIR, let directory = opendir(path) else { return }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != ".", name != ".." else { continue }
            try own(path + "/" + name, uid: uid)
        }
    }
}
