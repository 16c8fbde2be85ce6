// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing

@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Varlink

/// A call whose gates all decide from memory (`Gate.deciding`), to a handler that can answer
/// without waiting, is answered where the transport read it (`VarlinkDispatcher.answerNow`);
/// anything else is left to the task path, and no gate that changes state is asked twice.
@Suite struct AnswerNowThroughGatesTests {
    static let idl = """
        # Calls answered through gates.
        interface io.example.Now

        # Says who the gates made the caller.
        method Who() -> (who: string)
        """

    struct Who: Command {
        static let method = "io.example.Now.Who"
        typealias Reply = WhoReply
    }
    struct WhoReply: Codable, Sendable { var who: String }

    /// The session gate's shape (`DecidingGate`, in the session's place), refusing with a wire
    /// error.
    func sessionGate(_ log: GateLog) -> DecidingGate { DecidingGate(log: log, refusal: PermissionDenied(reason: "bad token"), position: .session) }

    /// Like the limits gate: counts every call of a signed-in caller, refuses past `allowed`.
    struct CountingGate: Gate {
        let log: GateLog
        let counter: Counter
        let allowed: Int
        var position: GatePosition = .limits
        var name: String { "count" }
        var deciding: Deciding { .always }
        func applies(to envelope: Envelope) -> Bool { position != .limits || envelope.caller.principal != nil }
        func decide(_ envelope: inout Envelope) -> GateDecision {
            log.append("count.decide")
            return counter.take() > allowed ? .deny(RateLimited(retryAfterSeconds: 7)) : .pass
        }
        func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
            try await handleByDeciding(envelope, next: next)
        }
    }

    final class Counter: Sendable {
        private let taken = Mutex(0)
        var value: Int { taken.withLock { $0 } }
        func take() -> Int {
            taken.withLock { n in
                n += 1
                return n
            }
        }
    }

    func dispatcher(_ gates: [any Gate]) throws -> (EventBus, VarlinkDispatcher) {
        let bus = EventBus(gates: gates)
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        try dispatcher.register(VarlinkInterface(parsing: Self.idl))
        return (bus, dispatcher)
    }

    func now(_ dispatcher: VarlinkDispatcher, token: String?) -> VarlinkReply? {
        var reply: VarlinkReply?
        let caller = Caller(sessionToken: token.map { SessionToken($0) })
        return dispatcher.answerNow(VarlinkCall(method: Who.method, parameters: [:]), as: caller, emit: { reply = $0 }) ? reply : nil
    }

    func later(_ dispatcher: VarlinkDispatcher, token: String?) async throws -> VarlinkReply {
        var replies: [VarlinkReply] = []
        let caller = Caller(sessionToken: token.map { SessionToken($0) })
        try await dispatcher.handle(VarlinkCall(method: Who.method, parameters: [:]), as: caller) { replies.append($0) }
        return try #require(replies.first)
    }

    @Test func gatesThatDecideFromMemoryLetTheCallBeAnsweredNowAndEachDecidesOnce() async throws {
        let log = GateLog()
        let counted = Counter()
        let (bus, dispatcher) = try dispatcher([CountingGate(log: log, counter: counted, allowed: 2), sessionGate(log)])
        try bus.answer(Who.self) { _, envelope in WhoReply(who: envelope.caller.principal?.userID ?? "nobody") }

        #expect(try now(dispatcher, token: "good")?.parametersValue()["who"] == "d1")
        // Each gate asked once, in the chain's order.
        #expect(log.all == ["deciding.decide", "count.decide"])
        #expect(counted.value == 1)
        log.clear()

        // A token the cache does not hold: left to the task path, with nothing counted here.
        #expect(now(dispatcher, token: "unknown") == nil)
        #expect(log.all == ["deciding.decide"] && counted.value == 1)
        log.clear()
        #expect(try await later(dispatcher, token: "unknown").parametersValue()["who"] == "h1")
        #expect(log.all == ["deciding.decide", "deciding.handle", "count.decide"] && counted.value == 2)
        log.clear()

        // Refusals are answers too, from the gate that refuses first in the chain's order.
        let refused = try #require(now(dispatcher, token: "bad"))
        #expect(refused.error == PermissionDenied(reason: "").wireName)
        #expect(!log.all.contains("count.decide"), "a refused session counts nothing")
        #expect(counted.value == 2)
        let overLimit = try #require(now(dispatcher, token: "good"), "past the count: refused by the counting gate, at once")
        #expect(overLimit.error == RateLimited(retryAfterSeconds: 0).wireName)
        #expect(try overLimit.parametersValue()["retryAfterSeconds"] == 7)
        #expect(counted.value == 3)
        // No token: no gate applies.
        #expect(try now(dispatcher, token: nil)?.parametersValue()["who"] == "nobody")
    }

    @Test func aGateThatNeverDecidesKeepsTheCallOnTheTaskPathBeforeAnyGateIsAsked() async throws {
        let log = GateLog()
        let counted = Counter()
        let (bus, dispatcher) = try dispatcher([
            sessionGate(log), CountingGate(log: log, counter: counted, allowed: 10), RecordingGate(name: "audit", log: log),
        ])
        try bus.answer(Who.self) { _, envelope in WhoReply(who: envelope.caller.principal?.userID ?? "nobody") }
        #expect(now(dispatcher, token: "good") == nil)
        #expect(log.all == ["deciding.decide"], "the counting gate was not asked: a gate after it must run handle")
        #expect(counted.value == 0)
        log.clear()
        #expect(try await later(dispatcher, token: "good").parametersValue()["who"] == "d1")
        #expect(log.all == ["deciding.decide", "count.decide", "audit.in", "audit.out"] && counted.value == 1)
    }

    @Test func aGateThatChangesStateIsNotAskedBeforeOneThatMayHaveToWait() async throws {
        let log = GateLog()
        let counted = Counter()
        // Outermost, on every call: it must not count a call that then runs in a task anyway.
        let (bus, dispatcher) = try dispatcher([CountingGate(log: log, counter: counted, allowed: 10, position: .scope), sessionGate(log)])
        try bus.answer(Who.self) { _, envelope in WhoReply(who: envelope.caller.principal?.userID ?? "nobody") }
        #expect(now(dispatcher, token: "good") == nil)
        #expect(log.all.isEmpty && counted.value == 0)
        #expect(try await later(dispatcher, token: "good").parametersValue()["who"] == "d1")
        #expect(log.all == ["count.decide", "deciding.decide"] && counted.value == 1)
        log.clear()
        // With no token the later gate does not apply: answered now, counted once.
        #expect(try now(dispatcher, token: nil)?.parametersValue()["who"] == "nobody")
        #expect(log.all == ["count.decide"] && counted.value == 2)
    }

    @Test func aHandlerThatMustWaitAfterAllLeavesTheCallToTheTaskPath() async throws {
        let log = GateLog()
        let (bus, dispatcher) = try dispatcher([sessionGate(log)])
        let fromMemory = Mutex(true)
        try bus.answer(
            Who.self, now: { _, envelope in fromMemory.withLock { $0 } ? WhoReply(who: "now:" + (envelope.caller.principal?.userID ?? "-")) : nil },
            later: { _, envelope in
                await Task.yield()
                return WhoReply(who: "later:" + (envelope.caller.principal?.userID ?? "-"))
            })
        #expect(try now(dispatcher, token: "good")?.parametersValue()["who"] == "now:d1")
        fromMemory.withLock { $0 = false }
        #expect(now(dispatcher, token: "good") == nil)
        #expect(try await later(dispatcher, token: "good").parametersValue()["who"] == "later:d1")
        fromMemory.withLock { $0 = true }
        #expect(try await later(dispatcher, token: "good").parametersValue()["who"] == "now:d1", "the task path asks now first")
        #expect(try await bus.send(Who(), as: Caller(sessionToken: SessionToken("good"))).who == "now:d1")
    }
}
