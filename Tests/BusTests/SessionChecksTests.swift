// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing
import TestSupport
@testable import Bus
@testable import Serving

/// A stand-in session gate: counts the checks, holds each until released, refuses once told to.
final class CountingSessionGate: Gate {
    struct State {
        var checks = 0
        var running = 0
        var most = 0
        var refuse = false
    }
    let state = Mutex(State())
    let release = Mutex<[CheckedContinuation<Void, Never>]>([])
    var name: String { "session" }
    func covers(_ requirement: Requirement) -> Bool { requirement == .session }
    func applies(to envelope: Envelope) -> Bool { envelope.requirements.contains(.session) }
    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        state.withLock { s in
            s.checks += 1
            s.running += 1
            s.most = max(s.most, s.running)
        }
        await withCheckedContinuation { c in release.withLock { $0.append(c) } }
        let refuse = state.withLock { s in
            s.running -= 1
            return s.refuse
        }
        if refuse { throw PermissionDenied(reason: "the session was revoked") }
        return try await next(envelope)
    }
    func releaseAll() {
        for c in release.withLock({ r in
            defer { r = [] }; return r
        }) { c.resume() }
    }
    var checks: Int { state.withLock { $0.checks } }
    /// Checks held right now.
    var held: Int { release.withLock { $0.count } }
}

@Suite struct SessionChecksTests {
    func bus(_ gate: CountingSessionGate) throws -> EventBus {
        let bus = EventBus(gates: [gate])
        try bus.register(BusInterface.CheckSession.self) { _, _ in Empty() }
        return bus
    }

    /// Wakes while a check runs make one more check after it, not one each; never two at once.
    @Test func checksRunOneAtATimeAndWakesMeanwhileCoalesce() async throws {
        let gate = CountingSessionGate()
        let stop = StopSignal()
        let checks = SessionChecks(bus: try bus(gate), caller: .daemon, stop: stop, limits: SubscribeLimits(sessionRecheck: .seconds(3600)))
        checks.start()
        checks.check()
        #expect(await eventually { gate.held == 1 })
        for _ in 0..<20 { checks.check() }
        gate.releaseAll()
        #expect(await eventually { gate.held == 1 && gate.checks == 2 })
        gate.releaseAll()
        try await Task.sleep(for: .milliseconds(100))
        #expect(gate.checks == 2 && gate.state.withLock { $0.most } == 1)
        // Idle again: the next wake checks again.
        checks.check()
        #expect(await eventually { gate.held == 1 && gate.checks == 3 })
        gate.releaseAll()
        #expect(!stop.isStopped && checks.failure == nil)
        checks.finish()
    }

    /// A refused check stops the stream with the gate's error; so does the end of its lifetime.
    @Test func aRefusedCheckOrTheLifetimeStopsTheStream() async throws {
        let gate = CountingSessionGate()
        let stop = StopSignal()
        let checks = SessionChecks(bus: try bus(gate), caller: .daemon, stop: stop, limits: SubscribeLimits(sessionRecheck: .milliseconds(50)))
        checks.start()
        // The periodic check comes by itself.
        #expect(await eventually { gate.held == 1 })
        gate.state.withLock { $0.refuse = true }
        gate.releaseAll()
        #expect(await eventually { stop.isStopped })
        #expect((checks.failure as? PermissionDenied)?.reason == "the session was revoked")
        checks.finish()

        let ended = StopSignal()
        let short = SessionChecks(
            bus: try bus(CountingSessionGate()), caller: .daemon, stop: ended,
            limits: SubscribeLimits(sessionRecheck: .seconds(3600), maxUserStreamLifetime: .milliseconds(100)))
        short.start()
        #expect(await eventually { ended.isStopped })
        #expect(short.failure is StreamLifetimeEnded)
        short.finish()
    }

    /// Once finished, nothing checks or stops any more.
    @Test func afterFinishNothingRuns() async throws {
        let gate = CountingSessionGate()
        let stop = StopSignal()
        let checks = SessionChecks(bus: try bus(gate), caller: .daemon, stop: stop, limits: SubscribeLimits(sessionRecheck: .milliseconds(20)))
        checks.start()
        checks.finish()
        checks.check()
        try await Task.sleep(for: .milliseconds(200))
        #expect(gate.checks == 0 && !stop.isStopped)
    }
}
