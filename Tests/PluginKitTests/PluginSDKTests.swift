// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import PluginSDK
import Testing
import TestSupport

/// The Swift external-plugin SDK checks a plugin's handlers against its IDLs before it serves
/// anything, as appd checks a built-in plugin's.
@Suite(.cleansUp) struct PluginSDKTests {
    struct Add: Command {
        static let method = "io.appd.Sdk.Add"
        struct Reply: Codable, Sendable { var id: Int }
        var text: String
    }

    func socket() throws -> ListeningSocket {
        let dir = try TestScope.required(by: "a plugin socket").directory("appd-sdk")
        return try ListeningSocket.bind(path: dir + "/plugin.sock", mode: 0o600)
    }

    @Test func anIDLMethodWithoutAHandlerStopsThePluginBeforeItServes() async throws {
        let listener = try socket()
        defer { listener.close() }
        let idl = "interface io.appd.Sdk\nmethod Add(text: string) -> (id: int)\nmethod Remove(id: int) -> ()\n"
        await #expect(throws: InterfaceMismatch(plugin: "sdk", method: "io.appd.Sdk.Remove", problem: .unhandled)) {
            try await ExternalPluginServer.serve(
                listener: listener, info: .init(vendor: "t", product: "sdk", version: "1", url: ""), interfaces: [idl],
                logger: Logger(label: "t", handler: InMemoryLogHandler())
            ) { handlers in handlers.handle(Add.self) { c, _ in .init(id: c.text.count) } }
        }
    }

    @Test func aHandlerTheIDLDoesNotDeclareStopsThePlugin() async throws {
        let listener = try socket()
        defer { listener.close() }
        await #expect(throws: InterfaceMismatch(plugin: "sdk", method: "io.appd.Sdk.Add", problem: .notInInterface("io.appd.Sdk"))) {
            try await ExternalPluginServer.serve(
                listener: listener, info: .init(vendor: "t", product: "sdk", version: "1", url: ""), interfaces: ["interface io.appd.Sdk\nmethod Ping() -> ()\n"],
                logger: Logger(label: "t", handler: InMemoryLogHandler())
            ) { handlers in
                handlers.handleRaw(method: "io.appd.Sdk.Ping") { _, _ in [:] }
                handlers.handle(Add.self) { c, _ in .init(id: c.text.count) }
            }
        }
    }
}
