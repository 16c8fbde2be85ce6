// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Runtime

/// The stored bytes, one file each under the files directory (`ab/<id>`, by the id's first
/// characters), written whole to a temporary name, made durable, then renamed: a reader
/// never sees half a file, and a crash leaves no half file under a real name. Blocking I/O
/// runs on a small pool of its own, never on a loop.
struct FileBlobs: Sendable {
    let directory: String
    private static let pool = BlockingPool(name: "appd-files", threads: 2, queueLimit: 256)

    init(directory: String) { self.directory = directory }

    func path(of id: String) -> String { directory + "/" + String(id.suffix(2)) + "/" + id }

    /// Creates the directory (0700, with its parents) if it is missing.
    func prepare() throws {
        var path = directory.hasPrefix("/") ? "" : "."
        for part in directory.split(separator: "/") {
            path += "/" + part
            try Self.makeDirectory(path)
        }
        try Self.makeDirectory(directory + "/.incoming")
    }

    func write(_ bytes: [UInt8], id: String) async throws {
        let target = path(of: id), incoming = directory + "/.incoming/" + id
        let folder = String(target.dropLast(id.count + 1))
        try await Self.pool.run {
            try Self.makeDirectory(folder)
            let fd = open(incoming, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw FileBlobError("cannot create \(incoming): \(Self.errorText())") }
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    let reason = Self.errorText()
                    close(fd)
                    unlink(incoming)
                    throw FileBlobError("cannot write \(incoming): \(reason)")
                }
                written += n
            }
            guard fsync(fd) == 0 else {
                let reason = Self.errorText()
                close(fd)
                unlink(incoming)
                throw FileBlobError("cannot make \(incoming) durable: \(reason)")
            }
            close(fd)
            guard rename(incoming, target) == 0 else {
                let reason = Self.errorText()
                unlink(incoming)
                throw FileBlobError("cannot move \(incoming) to \(target): \(reason)")
            }
            Self.syncDirectory(folder)
        }
    }

    /// The whole file; nil when it is not there.
    func read(id: String) async throws -> [UInt8]? { try await readFile(path(of: id)) }

    private func readFile(_ path: String) async throws -> [UInt8]? {
        try await Self.pool.run { () throws -> [UInt8]? in
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else {
                if errno == ENOENT { return nil }
                throw FileBlobError("cannot open \(path): \(Self.errorText())")
            }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw FileBlobError("cannot stat \(path): \(Self.errorText())") }
            var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + done, $0.count - done) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw FileBlobError("cannot read \(path): \(n == 0 ? "it is shorter than it was" : Self.errorText())") }
                done += n
            }
            return bytes
        }
    }

    /// Where the bytes of upload `id` are gathered until it is complete.
    func partialPath(of id: String) -> String { directory + "/.incoming/" + id }

    /// Writes `bytes` at `offset` of upload `id`'s partial file (created when new) and makes
    /// them durable; what was there past `offset` is cut first (a retry after a cut body).
    func write(_ bytes: [UInt8], upload id: String, at offset: Int64) async throws {
        let path = partialPath(of: id)
        try await Self.pool.run {
            let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw FileBlobError("cannot open \(path): \(Self.errorText())") }
            defer { close(fd) }
            guard ftruncate(fd, off_t(offset)) == 0 else { throw FileBlobError("cannot cut \(path) to \(offset) bytes: \(Self.errorText())") }
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + written, bytes.count - written, off_t(offset) + off_t(written)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw FileBlobError("cannot write \(path): \(Self.errorText())") }
                written += n
            }
            guard fsync(fd) == 0 else { throw FileBlobError("cannot make \(path) durable: \(Self.errorText())") }
        }
    }

    /// The bytes gathered for upload `id` (nil: none).
    func readPartial(upload id: String) async throws -> [UInt8]? {
        try await readFile(partialPath(of: id))
    }

    func removePartials(_ ids: [String]) async throws {
        let paths = ids.map(partialPath(of:))
        try await Self.pool.run {
            for path in paths where unlink(path) != 0 && errno != ENOENT {
                throw FileBlobError("cannot remove \(path): \(Self.errorText())")
            }
        }
    }

    /// Removes the files of `ids` (those already gone are no error).
    func remove(_ ids: [String]) async throws {
        let paths = ids.map(path(of:))
        try await Self.pool.run {
            for path in paths where unlink(path) != 0 && errno != ENOENT {
                throw FileBlobError("cannot remove \(path): \(Self.errorText())")
            }
        }
    }

    /// One file on disk the sweep looks at: its path, the id it belongs to (a thumbnail's is
    /// its file's), and whether it is in `.incoming`.
    struct Found: Sendable, Equatable {
        var path: String
        var id: String
        var incoming: Bool
    }

    /// The files under the directory last changed before `before` (Unix seconds), at most
    /// `limit`: what `BlobSweeper` checks against the rows. Names that are not appd's are left out.
    func files(changedBefore before: Int64, limit: Int) async throws -> [Found] {
        let root = directory
        return try await Self.pool.run { () throws -> [Found] in
            var found: [Found] = []
            func scan(_ folder: String, incoming: Bool) {
                guard let handle = opendir(folder) else { return }
                defer { closedir(handle) }
                while found.count < limit, let entry = readdir(handle) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    guard name.hasPrefix("f_") || name.hasPrefix("u_") else { continue }
                    let path = folder + "/" + name
                    var info = stat()
                    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_mtim.tv_sec) < before else { continue }
                    let id = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
                    found.append(Found(path: path, id: id, incoming: incoming))
                }
            }
            scan(root + "/.incoming", incoming: true)
            guard let handle = opendir(root) else { return found }
            defer { closedir(handle) }
            while found.count < limit, let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
                guard name.utf8.count == 2, !name.hasPrefix(".") else { continue }
                scan(root + "/" + name, incoming: false)
            }
            return found
        }
    }

    /// Removes files by path (those already gone are no error).
    func remove(paths: [String]) async throws {
        try await Self.pool.run {
            for path in paths where unlink(path) != 0 && errno != ENOENT {
                throw FileBlobError("cannot remove \(path): \(Self.errorText())")
            }
        }
    }

    private static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw FileBlobError("cannot create the directory \(path): \(errorText())")
        }
    }

    private static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}

/// A stored file could not be written, read or removed (the disk, permissions).
struct FileBlobError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
