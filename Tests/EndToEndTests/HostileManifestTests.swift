// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// Security review finding 1 (forged account deletion through a plugin named like a built-in)
/// and finding 7 (a manifest taking appd's secrets), with hostile manifests on the real binary.
@Suite(.serialized, .timeLimit(.minutes(3))) struct HostileManifestTests {
    @Test func aPluginCannotTakeABuiltInsNameTopicsOrAppdsSecrets() async throws {
        let dir = try ExternalPluginTests.newDirectory()
        let plugins = dir + "/data/plugins"
        let event: [String: Any] = ["type": "(userId: string)", "audience": "owner"]
        // Named like the built-in auth plugin, declaring another plugin's event (refused either
        // way: before the fix its refusal unregistered every topic of the built-in auth plugin).
        try ExternalPluginTests.install(in: plugins, folder: "fake-auth", changes: ["name": "auth", "events": ["todos.created": event]])
        try ExternalPluginTests.install(in: plugins, folder: "thief", changes: ["name": "thief", "events": ["todos.created": event]])
        try ExternalPluginTests.install(in: plugins, folder: "squatter", changes: ["name": "squatter", "events": ["auth.passwordChangedSoon": event]])
        try ExternalPluginTests.install(
            in: plugins, folder: "leaky", changes: ["name": "leaky", "environment": ["PATH", "APPD_STRIPE_WEBHOOK_SECRETS", "APPD_DATABASE"]])
        let daemon = try await Daemon.start(
            environment: ["APPD_STRIPE_WEBHOOK_SECRETS": "whsec_topsecret", "APPD_CHAT_API_KEY": "sk-secret"], directory: dir)
        func lastError(_ name: String) async throws -> String { try await ExternalPluginTests.plugin(daemon, name)["lastError"] as? String ?? "" }
        #expect(try await lastError("fake-auth").contains("'auth' belongs to a built-in plugin"))
        #expect(try await lastError("thief").contains("todos.created already belongs to plugin 'todos'"))
        #expect(try await lastError("squatter").contains("auth.passwordChangedSoon already belongs to plugin 'auth'"))
        // What a manifest asks for is shown before anyone trusts the plugin.
        try ExternalPluginTests.install(
            in: plugins, folder: "asker", changes: ["name": "asker", "environment": ["PATH"], "calls": ["io.appd.Daemon.Status"], "capabilities": ["auth.resetTokens"]])
        _ = try await ExternalPluginTests.ctl(daemon, ["plugins", "rescan"])
        let asker = try await ExternalPluginTests.plugin(daemon, "asker")
        #expect(
            asker["grants"] as? String == "calls io.appd.Daemon.Status; capabilities auth.resetTokens; publishes greeter.>; environment PATH; reads \(Binaries.swiftRuntime)",
            "\(asker)")
        let leaky = try await lastError("leaky")
        #expect(leaky.contains("APPD_DATABASE, APPD_STRIPE_WEBHOOK_SECRETS") && leaky.contains("never passed to plugins"), "\(leaky)")

        // A rescan that drops and refuses plugins again leaves the built-ins' topics alone.
        let before = try await daemon.ctl(["events", "topics"]).stdout
        try FileManager.default.removeItem(atPath: plugins + "/thief")
        _ = try await ExternalPluginTests.ctl(daemon, ["plugins", "rescan"])
        let topics = try await daemon.ctl(["events", "topics"])
        #expect(topics.stdout == before, "the built-ins' topics, unchanged: \(topics.stdout)")
        #expect(topics.stdout.split(separator: "\n").contains { $0.hasPrefix("todos.created ") && $0.contains("todos") })
        for topic in ["auth.accountDeleted", "auth.somethingNew", "todos.created"] {
            let forged = try await daemon.ctl(["call", "io.appd.Bus.Publish", "{\"topic\":\"\(topic)\",\"payload\":{\"userId\":\"u_1\"},\"durable\":true}"])
            #expect(forged.status != 0 && forged.stderr.contains("TopicOwned"), "\(topic): \(forged)")
        }
        #expect(await daemon.stop() == 0)
    }
}
