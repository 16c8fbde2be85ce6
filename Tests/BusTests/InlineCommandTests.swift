// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
import Synchronization
import Testing

/// A handler registered with `answer` never waits, so a call no gate has anything to do for
/// is answered in the caller's own task: no task and no deadline race per call.
@Suite struct InlineCommandTests {
    /// The task the code calling this runs in.
    static func currentTask() -> Int? { withUnsafeCurrentTask { $0?.hashValue } }

    @Test func withNoGateToPassTheCallIsAnsweredInTheCallersTask() async throws {
        let bus = EventBus(options: .init(defaultTimeout: .seconds(30)))
        let ran = TaskRecord()
        try bus.answer(Echo.self) { command, _ in
            ran.record(Self.currentTask())
            return EchoReply(text: command.text.uppercased())
        }
        let caller = Self.currentTask()
        #expect(try await bus.send(Echo(text: "hi")) == EchoReply(text: "HI"))
        #expect(ran.last == caller, "typed send: in the caller's task")
        #expect(try await bus.call(method: Echo.method, parameters: ["text": "json"]) == ["text": "JSON"])
        #expect(ran.last == caller, "JSON call (the wire's): in the caller's task")
        // The control: a handler that may wait runs in a task of its own against the deadline.
        let other = EventBus(options: .init(defaultTimeout: .seconds(30)))
        try other.register(Echo.self) { command, _ in
            ran.record(Self.currentTask())
            return EchoReply(text: command.text)
        }
        _ = try await other.call(method: Echo.method, parameters: ["text": "x"])
        #expect(ran.last != caller)
    }

    @Test func aGateThatAppliesStillRunsFirstAndMayRefuse() async throws {
        let log = GateLog()
        let bus = EventBus(gates: [RecordingGate(name: "g", log: log)])
        try bus.answer(Echo.self) { command, _ in
            log.append("handler")
            return EchoReply(text: command.text)
        }
        #expect(try await bus.call(method: Echo.method, parameters: ["text": "a"]) == ["text": "a"])
        #expect(try await bus.send(Echo(text: "b")) == EchoReply(text: "b"))
        #expect(log.all == ["g.in", "handler", "g.out", "g.in", "handler", "g.out"])

        let refused = GateLog()
        let closed = EventBus(gates: [RecordingGate(name: "g", log: refused, refuse: Denied(reason: "no"))])
        try closed.answer(Echo.self) { command, _ in
            refused.append("handler")
            return EchoReply(text: command.text)
        }
        await #expect(throws: Denied(reason: "no")) { try await closed.call(method: Echo.method, parameters: ["text": "a"]) }
        #expect(refused.all == ["g.in"], "the handler never ran")
    }

    @Test func itsErrorsAndBadParametersReachTheCallerTyped() async throws {
        let bus = EventBus()
        try bus.answer(Echo.self) { command, _ in
            guard command.text != "boom" else { throw Denied(reason: "boom") }
            return EchoReply(text: command.text)
        }
        await #expect(throws: Denied(reason: "boom")) { try await bus.send(Echo(text: "boom")) }
        await #expect(throws: Denied(reason: "boom")) { try await bus.call(method: Echo.method, parameters: ["text": "boom"]) }
        await #expect(throws: InvalidParameters.self) { try await bus.call(method: Echo.method, parameters: ["text": 3]) }
    }
}

/// The last task a handler ran in.
final class TaskRecord: Sendable {
    private let value = Mutex<Int?>(nil)
    func record(_ task: Int?) { value.withLock { $0 = task } }
    var last: Int? { value.withLock { $0 } }
}
