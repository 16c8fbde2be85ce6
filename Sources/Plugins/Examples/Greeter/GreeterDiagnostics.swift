// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The greetings given by this process.
final class Counter: Sendable {
    private let count = Mutex(0)
    private let perUser = Mutex<[String: Int]>([:])
    func increment(for user: String?) -> Int {
        if let user { perUser.withLock { $0[user, default: 0] += 1 } }
        return count.withLock {
            $0 += 1; return $0
        }
    }
    var value: Int { count.withLock { $0 } }
    func greetings(of user: String) -> Int { perUser.withLock { $0[user] ?? 0 } }
}

/// "N -> target" for each open file descriptor, read from /proc/self/fd.
func openDescriptors() -> [String] {
    guard let directory = opendir("/proc/self/fd") else { return [] }
    defer { closedir(directory) }
    var found: [(Int32, String)] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard let fd = Int32(name), fd != dirfd(directory) else { continue }
        var target = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
        found.append((fd, "\(fd) -> " + (n > 0 ? String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?")))
    }
    return found.sorted { $0.0 < $1.0 }.map(\.1)
}

/// The names of the environment variables this process got, sorted.
func environmentNames() -> [String] {
    var names: [String] = []
    var entry = environ
    while let pointer = entry.pointee {
        names.append(String(String(cString: pointer).prefix { $0 != "=" }))
        entry += 1
    }
    return names.sorted()
}
