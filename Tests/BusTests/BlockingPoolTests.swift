// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import Synchronization
import Testing
import TestSupport

@Suite struct BlockingPoolTests {
    @Test func runReturnsWhatTheBlockingWorkReturnsOnANamedThread() async throws {
        let pool = BlockingPool(name: "test-pool", threads: 2, queueLimit: 4)
        let name = try await pool.run { () -> String in
            // What top -H and profilers show.
            let file = fopen("/proc/thread-self/comm", "r")
            defer { if let file { fclose(file) } }
            var buffer = [CChar](repeating: 0, count: 32)
            guard let file, fgets(&buffer, Int32(buffer.count), file) != nil else { return "" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).trimmingWhitespace()
        }
        #expect(name == "test-pool")
        #expect(try await pool.run { 6 * 7 } == 42)
        #expect(pool.shutdown())
    }

    @Test func aFullQueueIsRefusedAtOnceWithBusy() async throws {
        let pool = BlockingPool(name: "test-busy", threads: 1, queueLimit: 1)
        let release = Atomic<Bool>(false)
        let hold: @Sendable () -> Void = { while !release.load(ordering: .acquiring) { usleep(1000) } }
        try pool.submit(hold)  // runs
        try pool.submit(hold)  // waits
        #expect(throws: PoolRefusal.busy(pool: "test-busy", queueLimit: 1)) { try pool.submit(hold) }
        release.store(true, ordering: .releasing)
        #expect(pool.shutdown())
        #expect(throws: PoolRefusal.closed(pool: "test-busy")) { try pool.submit {} }
    }

    @Test func aCancelledCallerReturnsAtOnceAndQueuedWorkIsSkipped() async throws {
        let pool = BlockingPool(name: "test-cancel", threads: 1, queueLimit: 4)
        let release = Atomic<Bool>(false)
        let ranSecond = Atomic<Bool>(false)
        try pool.submit { while !release.load(ordering: .acquiring) { usleep(1000) } }
        let waiting = Task { try await pool.run { ranSecond.store(true, ordering: .releasing) } }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        release.store(true, ordering: .releasing)
        #expect(pool.shutdown())
        let ran = ranSecond.load(ordering: .acquiring)
        #expect(!ran)
    }

    @Test func idleThreadsRetireAndShutdownWaitsForRunningWork() async throws {
        let pool = BlockingPool(name: "test-idle", threads: 3, queueLimit: 8, idleTimeout: .milliseconds(50))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { _ = try await pool.run { usleep(20_000) } } }
            try await group.waitForAll()
        }
        // The threads that ran the work retire once idle.
        #expect(await eventually { pool.stats.threads == 0 })
        let finished = Atomic<Bool>(false)
        try pool.submit {
            usleep(100_000)
            finished.store(true, ordering: .releasing)
        }
        #expect(pool.shutdown(timeout: .seconds(5)))
        let done = finished.load(ordering: .acquiring)
        #expect(done)
    }
}
