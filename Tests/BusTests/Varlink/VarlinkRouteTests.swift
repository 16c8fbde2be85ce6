// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink

/// A dispatcher resolves a method once (`VarlinkRoute`) and keeps it only while nothing it
/// depends on changed: an interface or a handler added or removed is seen by the next call.
@Suite struct VarlinkRouteTests {
    static let idl = """
        # Routes that change under a running dispatcher.
        interface io.example.Routed

        # Says which handler answered.
        method Who() -> (who: string)

        # Declared, never handled.
        method Nobody() -> ()
        """

    struct Who: Command {
        static let method = "io.example.Routed.Who"
        typealias Reply = WhoReply
    }
    struct WhoReply: Codable, Sendable { var who: String }

    func call(_ dispatcher: VarlinkDispatcher, _ method: String) async throws -> VarlinkReply {
        var replies: [VarlinkReply] = []
        try await dispatcher.handle(VarlinkCall(method: method, parameters: [:]), as: Caller()) { replies.append($0) }
        return try #require(replies.first)
    }

    func now(_ dispatcher: VarlinkDispatcher, _ method: String) -> VarlinkReply? {
        var reply: VarlinkReply?
        return dispatcher.answerNow(VarlinkCall(method: method, parameters: [:]), as: Caller(), emit: { reply = $0 }) ? reply : nil
    }

    @Test func aRouteFollowsHandlersAndInterfacesAddedAndRemoved() async throws {
        let bus = EventBus()
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        // Not served yet: the errors say which part is missing, and nothing is kept for the name.
        #expect(try await call(dispatcher, "io.example.Routed.Who").error == "org.varlink.service.InterfaceNotFound")
        #expect(dispatcher.route("io.example.Routed.Who") == nil)

        try dispatcher.register(VarlinkInterface(parsing: Self.idl))
        #expect(try await call(dispatcher, "io.example.Routed.Missing").error == "org.varlink.service.MethodNotFound")
        #expect(try await call(dispatcher, "io.example.Routed.Who").error == "org.varlink.service.MethodNotImplemented")
        let unhandled = try #require(dispatcher.route("io.example.Routed.Who"))
        #expect(unhandled.info == nil)

        try bus.answer(Who.self) { _, _ in WhoReply(who: "first") }
        #expect(!dispatcher.isCurrent(unhandled), "a handler registered makes the route stale")
        #expect(try await call(dispatcher, "io.example.Routed.Who").parametersValue()["who"] == "first")
        #expect(try now(dispatcher, "io.example.Routed.Who")?.parametersValue()["who"] == "first")
        let handled = try #require(dispatcher.route("io.example.Routed.Who"))
        #expect(handled === dispatcher.route("io.example.Routed.Who"), "resolved once, then kept")

        bus.unregister(method: "io.example.Routed.Who")
        #expect(now(dispatcher, "io.example.Routed.Who") == nil, "no handler that answers now any more")
        #expect(try await call(dispatcher, "io.example.Routed.Who").error == "org.varlink.service.MethodNotImplemented")
        try bus.register(Who.self) { _, _ in WhoReply(who: "second") }
        #expect(try await call(dispatcher, "io.example.Routed.Who").parametersValue()["who"] == "second")

        dispatcher.unregister(interface: "io.example.Routed")
        #expect(try await call(dispatcher, "io.example.Routed.Who").error == "org.varlink.service.InterfaceNotFound")
        #expect(!dispatcher.serves("io.example.Routed.Who"))
    }

    /// Calls are counted per method, outcome and transport through the route's own series.
    @Test func callsThroughARouteAreCountedByOutcomeAndTransport() async throws {
        let bus = EventBus()
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        let name = "io.example.Counted\(UInt32.random(in: 0...UInt32.max))"
        try dispatcher.register(VarlinkInterface(parsing: Self.idl.replacingOccurrences(of: "io.example.Routed", with: name)))
        let method = name + ".Nobody"
        let before = (
            Metrics.shared.counter("appd_calls_total", labels: [method, "org.varlink.service.MethodNotImplemented", "varlink"]),
            Metrics.shared.counter("appd_calls_total", labels: [method, "org.varlink.service.MethodNotImplemented", "http"])
        )
        for _ in 0..<3 { _ = try await call(dispatcher, method) }
        try await dispatcher.handle(VarlinkCall(method: method, parameters: [:]), as: Caller(), transport: "http") { _ in }
        #expect(Metrics.shared.counter("appd_calls_total", labels: [method, "org.varlink.service.MethodNotImplemented", "varlink"]) == before.0 + 3)
        #expect(Metrics.shared.counter("appd_calls_total", labels: [method, "org.varlink.service.MethodNotImplemented", "http"]) == before.1 + 1)
    }
}
