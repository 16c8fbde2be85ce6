// SPDX-License-Identifier: Apache-2.0
import Bus
import Foundation
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport

/// The idempotency gate and the bus's part of it, with a bare bus: which calls may carry a key,
/// that only the handler's writes carry it (a later gate's own do not), the JSON path, and the
/// varlink call object's `idempotencyKey`.
@Suite(.cleansUp) struct IdempotencyGateTests {
    struct Change: Command {
        static let method = "io.example.Things.Change"
        static var requirements: [Requirement] { [.idempotent] }
        struct Reply: Codable, Sendable, Equatable { var n: Int }
        var name: String
    }
    struct Read: Command {
        static let method = "io.example.Things.Read"
        typealias Reply = Empty
    }

    /// A gate inside the idempotency gate that records whether it ran with the call's record.
    struct Probe: Gate {
        let box: Box
        var name: String { "probe" }
        func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
            box.probe.withLock { $0.append(IdempotencyRecord.current != nil) }
            return try await next(envelope)
        }
    }

    final class Box: Sendable {
        let probe = Mutex<[Bool]>([])
        let handler = Mutex<[Bool]>([])
        let runs = Mutex(0)
    }

    func bus(_ box: Box, gate: Bool = true) async throws -> (EventBus, any Database) {
        let scope = try TestScope.required(by: "IdempotencyGateTests")
        let database = try await TestDatabase.open(path: try scope.directory("appd-idem") + "/appd.db", outbox: nil)
        scope.closes(database)
        let gates: [any Gate] = (gate ? [IdempotencyGate(database: database)] : []) + [Probe(box: box)]
        let bus = EventBus(gates: gates)
        try bus.register(Change.self) { c, _ in
            box.handler.withLock { $0.append(IdempotencyRecord.current != nil) }
            return .init(
                n: box.runs.withLock {
                    $0 += 1; return $0
                })
        }
        try bus.register(Read.self) { _, _ in Empty() }
        return (bus, database)
    }

    @Test func onlyTheHandlerRunsWithTheRecordAndARetryDoesNotRunIt() async throws {
        let box = Box()
        let (bus, database) = try await bus(box)
        let key = try IdempotencyKey("one")
        #expect(try await bus.send(Change(name: "a"), idempotencyKey: key) == .init(n: 1))
        #expect(try await bus.send(Change(name: "a"), idempotencyKey: key) == .init(n: 1))
        // The JSON path gets the same stored reply.
        #expect(try await bus.call(method: Change.method, parameters: ["name": "a"], idempotencyKey: key) == ["n": 1])
        #expect(box.runs.withLock { $0 } == 1)
        #expect(box.probe.withLock { $0 } == [false])
        #expect(box.handler.withLock { $0 } == [true])
        // Without a key, every call runs, and nothing carries a record.
        _ = try await bus.send(Change(name: "a"))
        #expect(box.handler.withLock { $0 } == [true, false])
        await database.close()
    }

    @Test func whichCallsMayCarryAKey() async throws {
        let box = Box()
        let (bus, database) = try await bus(box)
        await #expect(throws: IdempotencyNotSupported(method: Read.method)) { _ = try await bus.send(Read(), idempotencyKey: try IdempotencyKey("k")) }
        await #expect(throws: IdempotencyKeyReused(method: Change.method)) {
            _ = try await bus.send(Change(name: "a"), idempotencyKey: try IdempotencyKey("k"))
            _ = try await bus.send(Change(name: "b"), idempotencyKey: try IdempotencyKey("k"))
        }
        await database.close()
        // Without the gate, a keyed call is denied (fail closed); a call without a key is not.
        let (bare, other) = try await self.bus(Box(), gate: false)
        await #expect(throws: RequirementUnavailable(method: Change.method, requirement: .idempotent)) {
            _ = try await bare.send(Change(name: "a"), idempotencyKey: try IdempotencyKey("k"))
        }
        #expect(try await bare.send(Change(name: "a")) == .init(n: 1))
        await other.close()
    }

    @Test func theVarlinkCallObjectCarriesTheKey() throws {
        let call = try VarlinkCall(frame: Array(#"{"method": "io.example.Things.Change", "parameters": {"name": "a"}, "idempotencyKey": "k-1"}"#.utf8))
        #expect(call.idempotencyKey == "k-1")
        #expect(try VarlinkCall(frame: call.frame().dropLast()) == call)
        #expect(throws: VarlinkProtocolError.self) { try VarlinkCall(frame: Array(#"{"method": "a.B", "idempotencyKey": 5}"#.utf8)) }
        #expect(try VarlinkCall(frame: Array(#"{"method": "a.B", "idempotencyKey": null}"#.utf8)).idempotencyKey == nil)
    }

    @Test func aDispatchedCallWithABadKeyGetsATypedError() async throws {
        let box = Box()
        let (bus, database) = try await bus(box)
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        try dispatcher.register(try VarlinkInterface(parsing: "interface io.example.Things\nmethod Change(name: string) -> (n: int)\nmethod Read() -> ()\n"))
        var replies: [VarlinkReply] = []
        for key in ["", String(repeating: "k", count: 256), "with space", "fine"] {
            try await dispatcher.handle(VarlinkCall(method: Change.method, parameters: ["name": "a"], idempotencyKey: key), as: .daemon) { replies.append($0) }
        }
        #expect(replies.prefix(3).map(\.error) == Array(repeating: "io.appd.Bus.InvalidIdempotencyKey", count: 3))
        #expect(replies.last == VarlinkReply(parameters: ["n": 1]))
        await database.close()
    }
}
