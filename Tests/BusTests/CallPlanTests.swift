// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing
import TestSupport

/// A method's call plan (`CallPlan`): its calls walk only the gates that may apply to it, in
/// the chain's order, worked out when its handler is installed.
@Suite struct CallPlanTests {
    struct Probed: Command {
        static let method = "io.appd.Test.Probed"
        static let requirements: [Requirement] = [.capability("probe")]
        typealias Reply = Empty
    }

    /// Applies by the method's requirement alone, counts how often it is asked, refuses a call
    /// whose caller has no token.
    struct ProbeGate: Gate {
        let counter: Counter
        var name: String { "probe" }
        func covers(_ requirement: Requirement) -> Bool { requirement == .capability("probe") }
        func mayApply(toMethodRequiring requirements: [Requirement]) -> Bool { requirements.contains(.capability("probe")) }
        func applies(to envelope: Envelope) -> Bool {
            counter.asked.add(1, ordering: .relaxed)
            return mayApply(toMethodRequiring: envelope.requirements)
        }
        func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
            guard envelope.caller.sessionToken != nil else { throw PermissionDenied(reason: "no token") }
            return try await next(envelope)
        }
    }

    final class Counter: Sendable {
        let asked = Atomic<Int>(0)
    }

    @Test func aCallSkipsTheGatesOutOfItsMethodsPlanAndStillMeetsTheOthers() async throws {
        let counter = Counter()
        let log = GateLog()
        let bus = EventBus(gates: [RecordingGate(name: "outer", log: log), ProbeGate(counter: counter)])
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        try bus.register(Probed.self) { _, _ in Empty() }

        // A method the gate cannot apply to: the gate is not even asked.
        _ = try await bus.send(Echo(text: "a"))
        _ = try await bus.call(method: Echo.method, parameters: ["text": "b"])
        #expect(counter.asked.load(ordering: .relaxed) == 0)
        #expect(log.all == ["outer.in", "outer.out", "outer.in", "outer.out"])

        // One it applies to: asked, and its refusal stands, typed or by name.
        await #expect(throws: PermissionDenied.self) { _ = try await bus.send(Probed()) }
        await #expect(throws: PermissionDenied.self) { _ = try await bus.call(method: Probed.method, parameters: [:]) }
        #expect(counter.asked.load(ordering: .relaxed) >= 2)
        _ = try await bus.send(Probed(), as: Caller(sessionToken: SessionToken("t")))
    }

    @Test func aRequirementNoGateCoversIsRefusedBeforeAnyGateRuns() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [RecordingGate(name: "outer", log: log)])
        try bus.register(Probed.self) { _, _ in Empty() }
        await #expect(throws: RequirementUnavailable.self) { _ = try await bus.send(Probed()) }
        await #expect(throws: RequirementUnavailable.self) { _ = try await bus.call(method: Probed.method, parameters: [:]) }
        #expect(log.all.isEmpty)
    }
}
