// SPDX-License-Identifier: Apache-2.0
import Bus
import Foundation
import Glibc
import Synchronization
import Testing

/// Binding a socket must not change the process-wide umask, even for a moment: another thread
/// creating a directory then would get the wrong mode (CI once saw a test directory made 0600,
/// which a plugin's uid could not pass).
@Suite struct ListeningSocketUmaskTests {
    @Test func directoriesMadeWhileSocketsAreBoundKeepTheirMode() async throws {
        var template = Array("/tmp/appd-umask-XXXXXX".utf8CString)
        let dir = try #require(mkdtemp(&template).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let expected = mode_t(0o755) & ~currentUmask()
        let stop = Atomic<Bool>(false)
        let bound = Atomic<Int>(0)
        let failed = Atomic<Bool>(false)
        // A thread of its own binds and closes sockets while this one makes directories.
        Thread.detachNewThread {
            var n = 0
            while !stop.load(ordering: .relaxed) {
                guard let socket = try? ListeningSocket.bind(path: dir + "/s\(n % 4).sock", mode: 0o600) else {
                    failed.store(true, ordering: .relaxed)
                    break
                }
                socket.close()
                n += 1
                bound.store(n, ordering: .relaxed)
            }
        }
        // On a thread of its own too: the loop must not hold one of the few cooperative threads.
        let pool = BlockingPool(name: "umask-test", threads: 1, queueLimit: 1)
        defer { pool.close() }
        let wrong = try await pool.run { () -> [String] in
            var wrong: [String] = []
            let deadline = ContinuousClock.now + .seconds(30)
            var i = 0
            // At least 2000 directories, and while at least 500 binds happen (bounded in time).
            while (i < 2000 || bound.load(ordering: .relaxed) < 500) && !failed.load(ordering: .relaxed) && ContinuousClock.now < deadline {
                let path = dir + "/d\(i)"
                mkdir(path, 0o755)
                var info = stat()
                stat(path, &info)
                if info.st_mode & 0o777 != expected { wrong.append("\(path) is \(String(info.st_mode & 0o777, radix: 8))") }
                rmdir(path)
                i += 1
            }
            stop.store(true, ordering: .relaxed)
            return wrong
        }
        let bindFailed = failed.load(ordering: .relaxed), binds = bound.load(ordering: .relaxed)
        #expect(!bindFailed, "a bind failed")
        #expect(binds >= 500)
        let wrongModes = wrong.count
        #expect(wrongModes == 0, "\(wrong.prefix(3))")
    }

    /// Read without setting it (umask(2) can only be read by changing it).
    func currentUmask() -> mode_t {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        return line.flatMap { mode_t($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) } ?? 0o022
    }
}
