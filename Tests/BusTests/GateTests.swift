// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing
import TestSupport

@Suite struct GateTests {
    @Test func aDenialIsCountedForTheGateThatRefusedNotTheOnesAroundIt() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [
            RecordingGate(name: "denial-outer", log: log),
            RecordingGate(name: "denial-refuser", log: log, refuse: PermissionDenied(reason: "no")),
        ])
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        await #expect(throws: PermissionDenied.self) { _ = try await bus.send(Echo(text: "")) }
        let name = PermissionDenied(reason: "").wireName
        #expect(Metrics.shared.counter("appd_gate_denials_total", labels: ["denial-refuser", name]) == 1)
        #expect(Metrics.shared.counter("appd_gate_denials_total", labels: ["denial-outer", name]) == 0)
    }

    @Test func gatesRunOutermostFirstAndUnwindInReverse() async throws {
        let log = GateLog()
        let bus = EventBus(
            gates: ["limits", "session", "admin", "onboarding", "paywall"].map {
                RecordingGate(name: $0, log: log)
            })
        #expect(bus.chain.names == ["limits", "session", "admin", "onboarding", "paywall"])
        try bus.register(Echo.self) { c, _ in
            log.append("handler")
            return EchoReply(text: c.text)
        }
        _ = try await bus.send(Echo(text: ""))
        #expect(
            log.all == [
                "limits.in", "session.in", "admin.in", "onboarding.in", "paywall.in", "handler",
                "paywall.out", "onboarding.out", "admin.out", "session.out", "limits.out",
            ])
    }

    @Test func aRefusingGateShortCircuitsInnerGatesAndTheHandler() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [
            RecordingGate(name: "outer", log: log),
            RecordingGate(name: "refuser", log: log, refuse: Denied(reason: "rate limited")),
            RecordingGate(name: "inner", log: log),
        ])
        try bus.register(Echo.self) { c, _ in
            log.append("handler")
            return EchoReply(text: c.text)
        }
        await #expect(throws: Denied(reason: "rate limited")) { try await bus.send(Echo(text: "")) }
        #expect(log.all == ["outer.in", "refuser.in"])
    }

    /// A gate that decides from memory passes (with its change to the envelope) or refuses
    /// without `handle`; one that cannot decide falls back to `handle`, and the gates around it
    /// still nest as before.
    @Test func aGateThatDecidesFromMemoryNeedsNoHandle() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [RecordingGate(name: "outer", log: log), DecidingGate(log: log), RecordingGate(name: "inner", log: log)])
        try bus.register(Echo.self) { c, envelope in
            log.append("handler")
            return EchoReply(text: c.text, user: envelope.caller.principal?.userID)
        }
        func caller(_ token: String) -> Caller { Caller(sessionToken: SessionToken(token)) }

        #expect(try await bus.send(Echo(text: ""), as: caller("good")).user == "d1")
        #expect(log.all == ["outer.in", "deciding.decide", "inner.in", "handler", "inner.out", "outer.out"])
        log.clear()
        // JSON calls decide the same way.
        #expect(try await bus.call(method: Echo.method, parameters: ["text": ""], as: caller("good"))["user"] == "d1")
        #expect(!log.all.contains("deciding.handle"))
        log.clear()

        await #expect(throws: Denied(reason: "bad token")) { try await bus.send(Echo(text: ""), as: caller("bad")) }
        #expect(log.all == ["outer.in", "deciding.decide"])
        #expect(Metrics.shared.counter("appd_gate_denials_total", labels: ["deciding", "other"]) >= 1, "counted for the gate that refused")
        log.clear()

        #expect(try await bus.send(Echo(text: ""), as: caller("other")).user == "h1")
        #expect(log.all == ["outer.in", "deciding.decide", "deciding.handle", "inner.in", "handler", "inner.out", "outer.out"])
    }

    /// A gate that forgot to decide but hands `handle` to its decision fails closed.
    struct UndecidedGate: Gate {
        var name: String { "undecided" }
        func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
            try await handleByDeciding(envelope, next: next)
        }
    }

    @Test func handlingByADecisionThatIsNotMadeFailsClosed() async throws {
        let bus = EventBus(gates: [UndecidedGate()])
        let ran = Flag()
        try bus.register(Echo.self) { c, _ in
            ran.set()
            return EchoReply(text: c.text)
        }
        await #expect(throws: PermissionDenied.self) { try await bus.send(Echo(text: "")) }
        #expect(!ran.isSet)
    }

    @Test func typedAndJSONCallsPassTheSameGates() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [RecordingGate(name: "g", log: log)])
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        _ = try await bus.send(Echo(text: ""))
        _ = try await bus.call(method: Echo.method, parameters: ["text": ""])
        #expect(log.all == ["g.in", "g.out", "g.in", "g.out"])
    }

    @Test func aRequirementNoGateCoversIsDeniedBeforeAnyGateRuns() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [RecordingGate(name: "limits", log: log)])
        let ran = Flag()
        try bus.register(NeedsSession.self) { _, _ in
            ran.set()
            return Empty()
        }
        await #expect(throws: RequirementUnavailable(method: NeedsSession.method, requirement: .session)) {
            try await bus.send(NeedsSession())
        }
        await #expect(throws: RequirementUnavailable.self) {
            try await bus.call(method: NeedsSession.method, parameters: [:])
        }
        #expect(!ran.isSet)
        #expect(log.all.isEmpty)
    }

    @Test func aGateCanResolveTheCallerForTheHandler() async throws {
        let bus = EventBus(gates: [TokenGate()])
        try bus.register(NeedsSession.self) { _, envelope in
            #expect(envelope.caller.principal?.userID == "u1")
            return Empty()
        }
        await #expect(throws: Denied(reason: "unauthenticated")) { try await bus.send(NeedsSession()) }
        _ = try await bus.send(NeedsSession(), as: Caller(sessionToken: SessionToken("good")))
    }

    @Test func streamsPassTheGatesBeforeTheyStart() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [RecordingGate(name: "g", log: log, refuse: Denied(reason: "no"))])
        let started = Flag()
        try bus.register(Count.self) { _, _, _ in
            started.set()
            return 0
        }
        await #expect(throws: Denied(reason: "no")) { try await bus.stream(Count(upTo: 1)) }
        // Something that must never happen: give it a moment to (wrongly) happen.
        try await Task.sleep(for: .milliseconds(20))
        #expect(!started.isSet)
    }

    @Test func sessionTokensAreRedactedInDescriptions() {
        #expect("\(SessionToken("secret-value"))" == "<redacted>")
        #expect(!"\(Caller(sessionToken: SessionToken("secret-value")))".contains("secret"))
    }
}

/// A gate that records a stream's outcome slowly, as a paywall's refund would.
private struct OutcomeGate: Gate {
    let outcomes: GateLog
    var name: String { "outcome" }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        let reply = try await next(envelope)
        if let stream = reply as? any FinishObservable {
            await stream.whenFinished { [outcomes] end in
                try? await Task.sleep(for: .milliseconds(100))
                outcomes.append(end.error == nil ? "ok" : "failed")
            }
        }
        return reply
    }
}

@Suite struct StreamOutcomeTests {
    @Test(arguments: [false, true])
    func aStreamsErrorReachesTheConsumerOnlyAfterGatesActedOnIt(failAtOnce: Bool) async throws {
        let outcomes = GateLog()
        let bus = EventBus(gates: [OutcomeGate(outcomes: outcomes)])
        try bus.register(Count.self) { _, _, writer in
            if !failAtOnce { try await writer.send(1) }
            throw Denied(reason: "broken")
        }
        await #expect(throws: Denied(reason: "broken")) {
            for try await _ in try await bus.stream(Count(upTo: 5)) {}
        }
        // Not "eventually": the observer's work is done by the time the error arrives.
        #expect(outcomes.all == ["failed"])
    }

    @Test func aStreamThatSucceedsReportsNoError() async throws {
        let outcomes = GateLog()
        let bus = EventBus(gates: [OutcomeGate(outcomes: outcomes)])
        try bus.register(Count.self) { command, _, writer in
            for i in 1..<command.upTo { try await writer.send(i) }
            return command.upTo
        }
        var seen: [Int] = []
        for try await n in try await bus.stream(Count(upTo: 3)) { seen.append(n) }
        #expect(seen == [1, 2, 3])
        #expect(await eventually { outcomes.all == ["ok"] })
    }
}

/// A gate that only has work for commands that need a session.
private struct SessionOnlyGate: Gate {
    let log: GateLog
    var name: String { "sessionOnly" }
    func covers(_ requirement: Requirement) -> Bool { requirement == .session }
    func applies(to envelope: Envelope) -> Bool { envelope.requirements.contains(.session) }
    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        log.append("sessionOnly")
        return try await next(envelope)
    }
}

@Suite struct GateSkippingTests {
    @Test func aGateWithNothingToDoIsPassedByAndTheOthersStillRun() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [
            RecordingGate(name: "outer", log: log), SessionOnlyGate(log: log), RecordingGate(name: "inner", log: log),
        ])
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        try bus.register(NeedsSession.self) { _, _ in Empty() }
        _ = try await bus.send(Echo(text: ""))
        #expect(log.all == ["outer.in", "inner.in", "inner.out", "outer.out"])
        _ = try await bus.send(NeedsSession())
        #expect(log.all.suffix(5) == ["outer.in", "sessionOnly", "inner.in", "inner.out", "outer.out"])
    }
}

/// Security review finding 9: each signed-in account has a call budget, over any transport.
@Suite struct AccountLimitsGateTests {
    @Test func eachAccountHasItsOwnBudgetAndOthersPass() async throws {
        let bus = EventBus(gates: [AccountLimitsGate(perMinute: 60, burst: 3)])
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        let ada = Caller(principal: Principal(userID: "u_ada")), bob = Caller(principal: Principal(userID: "u_bob"))
        for _ in 0..<3 { _ = try await bus.send(Echo(text: "x"), as: ada) }
        do {
            _ = try await bus.send(Echo(text: "x"), as: ada)
            Issue.record("a fourth call at once passed")
        } catch let error as RateLimited {
            #expect(error.retryAfterSeconds == 1 && error.wireName == "io.appd.Bus.RateLimited")
        }
        _ = try await bus.send(Echo(text: "x"), as: bob)
        // No account: not this gate's to count (admins, plugins, the daemon).
        for _ in 0..<10 { _ = try await bus.send(Echo(text: "x")) }
    }
}
