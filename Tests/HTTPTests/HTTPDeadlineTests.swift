// SPDX-License-Identifier: Apache-2.0
import AppAPI
import Bus
import HTTP
import Runtime
import Synchronization
import Testing
import TestSupport

/// A call over HTTP runs in the server's task for its request, under a deadline the API keeps
/// (`KeptDeadline`), not in a race task of its own.
@Suite struct HTTPDeadlineTests {
    static let idl = """
        # Deadlines, for the tests.
        interface io.example.Deadlines

        # Says what deadline claim its handler runs under, and its nested call's.
        method Sees() -> (kept: bool, nestedRaced: bool)

        # Raced when called from a handler.
        method Inner() -> (raced: bool)

        # Waits for the test's latch, ignoring cancellation, then tries to commit.
        method Slow() -> ()
        """

    /// What `Slow` waits for (`release`), and what it saw once it woke: whether it was
    /// cancelled and whether its claim held.
    final class SlowOutcome: Sendable {
        let release = Latch()
        let seen = Mutex<(cancelled: Bool, claimed: Bool)?>(nil)
    }

    struct Fixture {
        let server: RunningServer
        let slow = SlowOutcome()

        init(callTimeout: Duration) throws {
            let bus = EventBus(gates: [])
            let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
            try dispatcher.register(try VarlinkInterface(parsing: HTTPDeadlineTests.idl))
            try bus.registerRaw(method: "io.example.Deadlines.Inner", requirements: []) { _, _ in
                await Task.yield()
                return ["raced": .bool(Deadline.current != nil && !(Deadline.current is KeptDeadline))]
            }
            try bus.registerRaw(method: "io.example.Deadlines.Sees", requirements: []) { _, _ in
                let kept = Deadline.current is KeptDeadline
                let inner = try await bus.call(method: "io.example.Deadlines.Inner", parameters: [:], timeout: .seconds(5))
                return ["kept": .bool(kept), "nestedRaced": inner["raced"] ?? false]
            }
            let slow = self.slow
            try bus.registerRaw(method: "io.example.Deadlines.Slow", requirements: []) { _, _ in
                await slow.release.wait()
                let cancelled = Task.isCancelled
                let claimed = Deadline.claim()
                slow.seen.withLock { $0 = (cancelled, claimed) }
                return [:]
            }
            var options = HTTPAPIOptions()
            options.callTimeout = callTimeout
            let api = HTTPAPI(
                dispatcher: dispatcher, options: options, exposed: { _ in true }, readiness: { [] },
                refusals: .auth, logger: Logger(label: "t", handler: InMemoryLogHandler()))
            server = try RunningServer(limits: options.limits) { request, body in api.handling(request, body) }
        }

        func post(_ method: String) async throws -> String {
            try await server.exchange("POST /v1/io.example.Deadlines/\(method) HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
        }
    }

    @Test func aCallRunsInTheRequestsTaskUnderTheKeptDeadlineAndItsNestedCallsAreRaced() async throws {
        let f = try Fixture(callTimeout: .seconds(30))
        let response = try await f.post("Sees")
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(response)")
        #expect(response.hasSuffix(#"{"kept":true,"nestedRaced":true}"#), "\(response)")
        await f.server.stop()
    }

    @Test func pastTheDeadlineTheClientIsAnsweredAtOnceAndTheWorkIsCancelledAndCannotCommit() async throws {
        let f = try Fixture(callTimeout: .milliseconds(300))
        let response = try await f.post("Slow")
        let workEnded = f.slow.seen.withLock { $0 != nil }
        #expect(response.hasPrefix("HTTP/1.1 504 "), "\(response)")
        #expect(response.contains(#""error":"io.appd.Bus.DeadlineExceeded""#), "\(response)")
        #expect(!workEnded, "answered at the deadline, before the work ended")
        f.slow.release.open()
        #expect(await eventually { f.slow.seen.withLock { $0 != nil } })
        let seen = f.slow.seen.withLock { $0 }
        #expect(seen?.cancelled == true, "the work was cancelled")
        #expect(seen?.claimed == false, "a write after the deadline is refused its commit")
        await f.server.stop()
    }

    @Test func keptDeadlineDecidesOnceForTheWorkOrForTheCaller() {
        let claimedFirst = KeptDeadline(method: "m", deadline: .now)
        #expect(claimedFirst.claim())
        #expect(!claimedFirst.expire(), "a claimed call commits: the caller waits for it")
        #expect(!claimedFirst.expired)
        let expiredFirst = KeptDeadline(method: "m", deadline: .now)
        #expect(expiredFirst.expire())
        #expect(!expiredFirst.claim(), "too late: the caller was told it timed out")
        let later = ContinuousClock.now.advanced(by: .seconds(1))
        let kept = KeptDeadline(method: "m", deadline: .now)
        #expect(!kept.take(for: "other", due: later), "another method's call is raced")
        #expect(!kept.take(for: "m", due: .now.advanced(by: .seconds(-1))), "a call due before the kept deadline is raced")
        #expect(kept.take(for: "m", due: later))
        #expect(!kept.take(for: "m", due: later), "it keeps one call")
    }
}
