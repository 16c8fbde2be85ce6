// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes whole buffers to a file descriptor, retrying short writes and EINTR.
public enum FileDescriptorWriter {
    /// Writes every byte; false when the descriptor refused (closed pipe, full disk, …).
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer -> Int in
                // Safe: the loop only runs for a non-empty array, whose base address exists.
                guard let base = buffer.baseAddress else { return 0 }
                return write(fd, base + offset, buffer.count - offset)
            }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}

/// Unbuffered writes to stderr (fd 2), safe from any task: no shared `FILE*` involved.
public enum StandardError {
    public static func write(_ text: String) {
        FileDescriptorWriter.writeAll(2, Array(text.utf8))
    }
}
