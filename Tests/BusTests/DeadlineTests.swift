// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Testing
import TestSupport

@Suite struct DeadlineTests {
    @Test func returnsTheResultBeforeTheDeadline() async throws {
        let value = try await Deadline.run(until: .now.advanced(by: .seconds(5)), timeoutError: { Denied(reason: "late") }) {
            42
        }
        #expect(value == 42)
    }

    @Test func waitingOnAFinishedTaskReturnsAtOnce() async throws {
        let task = Task<Void, any Error> { try await Task.sleep(for: .seconds(100)) }
        task.cancel()
        // Finishing before the deadline (not throwing "late") is the check: the cancelled task's
        // 100 s sleep ended at once. No clock bound of its own: one of 4 s failed on a machine
        // loaded by a parallel CI run (5.9 s).
        let finished = try await Deadline.run(until: .now.advanced(by: .seconds(30)), timeoutError: { Denied(reason: "late") }) {
            _ = await task.result
            return true
        }
        #expect(finished)
    }

    @Test func throwsAtTheDeadlineEvenIfTheWorkIgnoresCancellation() async throws {
        let start = ContinuousClock.now
        await #expect(throws: Denied(reason: "late")) {
            try await Deadline.run(until: .now.advanced(by: .milliseconds(50)), timeoutError: { Denied(reason: "late") }) {
                // Ignores cancellation on purpose.
                try? await Task.sleep(for: .seconds(10))
                _ = try? await Task.sleep(for: .seconds(10))
                return 1
            }
        }
        // Well short of the 20 s the work takes, with room for a loaded machine (one took 3.7 s).
        #expect(ContinuousClock.now - start < .seconds(10))
    }
}

@Suite struct DeadlineCancellationTests {
    @Test func anAlreadyCancelledCallerReturnsAtOnce() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Deadline.run(until: .now.advanced(by: .seconds(30)), timeoutError: { Denied(reason: "late") }) {
                try await Task.sleep(for: .seconds(30))
                return 1
            }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}

@Suite struct DeadlineWorkCancellationTests {
    @Test func theWorkOfAnAlreadyCancelledCallerIsCancelledToo() async throws {
        let cancelled = Flag()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Deadline.run(until: .now.advanced(by: .seconds(30)), timeoutError: { Denied(reason: "late") }) {
                do {
                    try await Task.sleep(for: .seconds(30))
                } catch {
                    cancelled.set()
                    throw error
                }
                return 1
            }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await eventually { cancelled.isSet })
    }

    @Test func workThatNeverSuspendsIsAnsweredInline() async throws {
        #expect(try await Deadline.run(until: .now.advanced(by: .seconds(30)), timeoutError: { Denied(reason: "late") }) { 7 } == 7)
    }
}
