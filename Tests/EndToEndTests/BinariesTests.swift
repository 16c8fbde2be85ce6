// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The helpers every end-to-end test waits on processes with: a wait is bounded, and a process
/// that outlives it fails the test (saying what it was) and is killed.
@Suite struct BinariesTests {
    static func sleeper(_ seconds: String = "60") throws -> ChildProcess {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = [seconds]
        try process.run()
        return process
    }

    @Test func aProcessThatOutlivesTheWaitFailsTheTestAndIsKilled() async throws {
        let process = try Self.sleeper()
        await withKnownIssue {
            await waitForExit(process, "the sleeper", within: .milliseconds(100)) { "; it sleeps" }
        } matching: { issue in
            String(describing: issue).contains("the sleeper (pid \(process.processIdentifier)) did not exit within") && String(describing: issue).contains("; it sleeps")
        }
        #expect(!process.isRunning)
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
    }

    @Test func aProcessThatExitsInTimeIsWaitedForQuietly() async throws {
        let process = try Self.sleeper("0.1")
        await waitForExit(process, "the sleeper", within: .seconds(30))
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }

    /// A child starts with the signal mask of the thread that spawned it, and the test threads
    /// block SIGTERM: this one unblocks it, as appd and appctl do.
    @Test func runStopsWhatOutlivesItsTimeLimit() async throws {
        let script = "import signal, time; signal.pthread_sigmask(signal.SIG_SETMASK, []); time.sleep(60)"
        let outcome = try await run("/usr/bin/python3", ["-c", script], timeout: 0.1)
        #expect(outcome.status == SIGTERM)
    }
}
