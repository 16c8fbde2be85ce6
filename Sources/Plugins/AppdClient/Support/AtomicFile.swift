// SPDX-License-Identifier: Apache-2.0
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a file whole or not at all, readable by its owner only: created 0600 before a byte
/// is written (never through a link), synced, renamed over the old file, and the folder synced,
/// so a crash or a power cut leaves the old contents or the new, never a mix.
enum AtomicFile {
    struct CannotWrite: Error, CustomStringConvertible {
        let path: String
        let errno: Int32
        var description: String { "cannot write \(path): \(String(cString: strerror(errno)))" }
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        let directory = folder.isEmpty ? "." : folder
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = directory + "/." + (path as NSString).lastPathComponent + "." + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CannotWrite(path: path, errno: errno) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc_write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else {
                let error = errno
                close(fd)
                unlink(temporary)
                throw CannotWrite(path: path, errno: error)
            }
            offset += written
        }
        guard fsync(fd) == 0 else {
            let error = errno
            close(fd)
            unlink(temporary)
            throw CannotWrite(path: path, errno: error)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = errno
            unlink(temporary)
            throw CannotWrite(path: path, errno: error)
        }
        let folderFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFD >= 0 {
            _ = fsync(folderFD)
            close(folderFD)
        }
    }
}

/// `write(2)`, named so it is not the enclosing type's `write`.
@inline(__always) private func Glibc_write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
