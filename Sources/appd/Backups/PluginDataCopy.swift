// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore

/// Copies the plugins' data folders into a backup while the plugins run, as root, without
/// trusting a name twice: every directory is opened relative to its parent's descriptor and
/// every file with `O_NOFOLLOW`, then `fstat` says what was really opened. A symbolic link a
/// plugin swapped in (to /etc/shadow) is never followed, a FIFO never read, and a file that
/// vanishes between the listing and the open is skipped and listed, not fatal (security
/// review 2, finding 3).
struct PluginDataCopy {
    /// What was left out, as "path: why", for the manifest.
    private(set) var skipped: [String] = []
    /// Files copied, relative to the source.
    private(set) var copied: [String] = []

    /// Copies the tree at `source` into `target` (created); a missing source is nothing to copy.
    static func copy(_ source: String, into target: String) throws(BackupProblem) -> PluginDataCopy {
        var copy = PluginDataCopy()
        let root = open(source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard root >= 0 else {
            if errno == ENOENT { return copy }
            throw BackupProblem("cannot open \(source): \(BackupFiles.errorText())")
        }
        try copy.walk(root, relative: "", into: target)
        return copy
    }

    /// Copies what the directory open at `fd` holds (and closes it).
    private mutating func walk(_ fd: Int32, relative: String, into target: String) throws(BackupProblem) {
        guard let directory = fdopendir(fd) else {
            close(fd)
            skipped.append("\(relative.isEmpty ? "." : relative): cannot list it (\(BackupFiles.errorText()))")
            return
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        for name in names.sorted() {
            let path = relative.isEmpty ? name : relative + "/" + name
            // O_NONBLOCK: a FIFO put there opens at once instead of waiting for a writer.
            let child = openat(dirfd(directory), name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            guard child >= 0 else {
                let why = errno == ELOOP ? "a symbolic link (not followed)" : errno == ENOENT ? "gone before it was read" : BackupFiles.errorText()
                skipped.append("\(path): \(why)")
                continue
            }
            var info = stat()
            guard fstat(child, &info) == 0 else {
                close(child)
                skipped.append("\(path): \(BackupFiles.errorText())")
                continue
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                try walk(child, relative: path, into: target)
            case S_IFREG:
                defer { close(child) }
                _ = fcntl(child, F_SETFL, O_RDONLY)  // back to blocking reads for the copy
                let destination = target + "/" + path
                try BackupFiles.makeDirectory(FileSystem.parent(of: destination))
                try BackupFiles.copy(descriptor: child, named: path, to: destination)
                copied.append(path)
            default:
                close(child)
                skipped.append("\(path): not a regular file or folder")
            }
        }
    }
}
