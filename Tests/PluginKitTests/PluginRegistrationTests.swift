// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing
import TestSupport
@testable import PluginKit

/// The host owns registration: a plugin declares handlers, the host checks them against the
/// plugin's IDL, installs them, serves the interface, and removes both at stop.
@Suite(.cleansUp) struct PluginRegistrationTests {
    static let idl = """
        interface io.appd.Notes
        method Add(text: string) -> (id: int)
        method Count() -> (count: int)
        """

    struct Add: Command {
        static let method = "io.appd.Notes.Add"
        struct Reply: Codable, Sendable { var id: Int }
        var text: String
    }
    struct Count: Command {
        static let method = "io.appd.Notes.Count"
        struct Reply: Codable, Sendable { var count: Int }
    }
    struct Purge: Command {
        static let method = "io.appd.Notes.Purge"
        typealias Reply = Empty
    }
    struct Lookup: Command {
        static let method = "io.appd.Notes.Lookup"
        typealias Reply = Empty
    }

    /// Declares the handlers `declare` names: "Add", "Count", "Purge" (not in the IDL),
    /// "Lookup" (in-process).
    struct NotesPlugin: Plugin {
        var declare: [String]
        var manifest: PluginManifest { PluginManifest(name: "notes", version: "1", interface: PluginRegistrationTests.idl) }
        func start(_ context: PluginContext) async throws {
            for name in declare {
                switch name {
                case "Add": context.handlers.handle(Add.self) { c, _ in .init(id: c.text.count) }
                case "Count": context.handlers.handle(Count.self) { _, _ in .init(count: 1) }
                case "Purge": context.handlers.handle(Purge.self) { _, _ in Empty() }
                case "Lookup": context.handlers.handleInProcess(Lookup.self) { _, _ in Empty() }
                default: Issue.record("unknown handler \(name)")
                }
            }
        }
    }

    func host(_ plugin: NotesPlugin) throws -> (PluginHost, PluginContext, VarlinkDispatcher) {
        let (context, _) = try makeContext()
        let dispatcher = try VarlinkDispatcher(bus: context.bus, info: .init(vendor: "t", product: "t", version: "0", url: "u"))
        let host = PluginHost(plugins: [plugin], disabled: [], context: context, dispatcher: dispatcher, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        return (host, context, dispatcher)
    }

    /// The plugin's methods on the bus (the dispatcher adds org.varlink.service's own).
    func notes(_ bus: EventBus) -> [String] { bus.methods.filter { $0.hasPrefix("io.appd.Notes.") } }

    /// One call through the dispatcher, as the socket makes it; its last reply.
    func call(_ dispatcher: VarlinkDispatcher, _ method: String, _ parameters: JSONValue = [:]) async throws -> VarlinkReply {
        let replies = Mutex<[VarlinkReply]>([])
        try await dispatcher.handle(VarlinkCall(method: method, parameters: parameters), as: .daemon) { reply in replies.withLock { $0.append(reply) } }
        return try #require(replies.withLock { $0.last })
    }

    @Test func aMatchingPluginIsServedAndEverythingIsRemovedAtStop() async throws {
        let (host, context, dispatcher) = try host(NotesPlugin(declare: ["Add", "Count", "Lookup"]))
        await host.startAll()
        #expect(await host.statuses().first?.state == .running)
        #expect(await host.servedInterfaces() == ["io.appd.Notes"])
        #expect(notes(context.bus) == ["io.appd.Notes.Add", "io.appd.Notes.Count", "io.appd.Notes.Lookup"])
        let reply = try await call(dispatcher, "io.appd.Notes.Add", ["text": "four"])
        #expect(reply.error == nil && reply.parameters["id"] == .int(4))
        // The in-process command answers on the bus but not on the wire (it is in no IDL).
        _ = try await context.bus.send(Lookup())
        #expect(try await call(dispatcher, "io.appd.Notes.Lookup").error == "org.varlink.service.MethodNotFound")

        await host.stopAll()
        #expect(notes(context.bus).isEmpty)
        #expect(try await call(dispatcher, "io.appd.Notes.Count").error == "org.varlink.service.InterfaceNotFound")
    }

    @Test func anIDLMethodWithoutAHandlerFailsTheStartNamingIt() async throws {
        let (host, context, _) = try host(NotesPlugin(declare: ["Add"]))
        await host.startAll()
        let status = await host.statuses().first
        #expect(status?.state == .failed)
        #expect(status?.lastError == "plugin 'notes' declares io.appd.Notes.Count in its interface but registers no handler for it")
        #expect(notes(context.bus).isEmpty, "nothing of a plugin that failed the check is installed")
        #expect(await host.servedInterfaces().isEmpty)
    }

    @Test func aHandlerTheIDLDoesNotDeclareFailsTheStartNamingIt() async throws {
        let (host, context, _) = try host(NotesPlugin(declare: ["Add", "Count", "Purge"]))
        await host.startAll()
        let status = await host.statuses().first
        #expect(status?.state == .failed)
        #expect(status?.lastError?.contains("handles io.appd.Notes.Purge, which its interface io.appd.Notes does not declare") == true)
        #expect(notes(context.bus).isEmpty)
    }

    @Test func twoHandlersForOneMethodFailTheStart() async throws {
        let (host, _, _) = try host(NotesPlugin(declare: ["Add", "Count", "Add"]))
        await host.startAll()
        #expect(await host.statuses().first?.lastError == "plugin 'notes' registers two handlers for io.appd.Notes.Add")
    }
}
