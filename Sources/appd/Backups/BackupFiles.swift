// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Crypto

/// The file operations a backup needs, each with a clear error: copying a tree, listing files,
/// fsync, hashing.
enum BackupFiles {
    /// Every entry under `root`, depth first, as paths relative to it: regular files, and
    /// directories after what they hold; symlinks and other kinds as `.other` (never followed).
    static func entries(under root: String) -> [(path: String, kind: Kind)] {
        var found: [(path: String, kind: Kind)] = []
        func walk(_ relative: String) {
            guard let directory = opendir(relative.isEmpty ? root : root + "/" + relative) else { return }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name != ".", name != ".." else { continue }
                let child = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard lstat(root + "/" + child, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    walk(child)
                    found.append((child, .directory))
                case S_IFREG: found.append((child, .file))
                default: found.append((child, .other))
                }
            }
        }
        walk("")
        return found
    }

    enum Kind { case file, directory, other }

    /// Every regular file under `root`, as paths relative to it (sorted): what a backup copies
    /// of a plugin's data folder (symlinks are not followed).
    static func files(under root: String) -> [String] {
        entries(under: root).filter { $0.kind == .file }.map(\.path).sorted()
    }

    static func size(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Copies `source` to `target` (created 0600) and makes it durable.
    static func copy(_ source: String, to target: String) throws(BackupProblem) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw BackupProblem("cannot read \(source): \(errorText())") }
        defer { close(input) }
        try copy(descriptor: input, named: source, to: target)
    }

    /// Copies what the open file `input` holds to `target` (created 0600) and makes it durable.
    static func copy(descriptor input: Int32, named source: String, to target: String) throws(BackupProblem) {
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw BackupProblem("cannot create \(target): \(errorText())") }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw BackupProblem("cannot read \(source): \(errorText())") }
            if n == 0 { break }
            var written = 0
            while written < n {
                let m = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, n - written) }
                if m < 0 && errno == EINTR { continue }
                guard m > 0 else { throw BackupProblem("cannot write \(target): \(errorText())") }
                written += m
            }
        }
        guard fsync(output) == 0 else { throw BackupProblem("cannot sync \(target): \(errorText())") }
    }

    /// Makes the directory's entries durable (after files were created or renamed in it).
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    static func makeDirectory(_ path: String) throws(BackupProblem) {
        do { try FileSystem.makeDirectories(path, mode: 0o700) } catch { throw BackupProblem("cannot create \(path): \(error)") }
    }

    static func sha256(_ path: String) throws(BackupProblem) -> String {
        do { return try Digest.sha256Hex(ofFile: path) } catch { throw BackupProblem(error.description) }
    }

    /// Removes a tree (a pruned backup, an abandoned partial one): what it holds, deepest first, then itself.
    static func remove(_ path: String) {
        for entry in entries(under: path) {
            let full = path + "/" + entry.path
            if entry.kind == .directory { rmdir(full) } else { unlink(full) }
        }
        rmdir(path)
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}
