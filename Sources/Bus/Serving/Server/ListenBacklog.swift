// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// How many connections a listening socket holds before appd accepts them: enough for a fleet
/// reconnecting at once after a restart (a client with a connect timeout is refused with
/// EAGAIN when the queue is full). By default the kernel's own ceiling,
/// `/proc/sys/net/core/somaxconn` (4096 on current kernels); Redis and nginx default to 511.
public enum ListenBacklog {
    /// The backlog for a configured value: itself, or with 0 the kernel's ceiling (4096 when it
    /// cannot be read). The kernel caps any value at its ceiling anyway.
    public static func resolve(_ configured: Int) -> Int32 {
        if configured > 0 { return Int32(clamping: configured) }
        return kernelCeiling() ?? 4096
    }

    /// `net.core.somaxconn`, when readable.
    public static func kernelCeiling() -> Int32? {
        let fd = open("/proc/sys/net/core/somaxconn", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0, let value = Int32(String(decoding: buffer[..<count], as: UTF8.self).filter(\.isNumber)), value > 0 else { return nil }
        return value
    }
}
