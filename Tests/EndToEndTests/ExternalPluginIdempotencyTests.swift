// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// Issue 32 for external plugins: a method whose manifest declares `idempotent` takes
/// idempotency keys as a built-in one does, through the real binaries.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ExternalPluginIdempotencyTests {
    /// An external plugin's method that declares `idempotent` takes keys like a built-in one:
    /// a retry with the same key gets the first reply and the plugin is not called again.
    @Test func anExternalPluginsIdempotentMethodRunsOncePerKey() async throws {
        let dir = try ExternalPluginTests.newDirectory()
        var requirements = ExternalPluginTests.manifest["requirements"] as? [String: [String]] ?? [:]
        requirements["io.appd.examples.Greeter.Hello"] = ["session", "idempotent"]
        try ExternalPluginTests.install(
            in: dir + "/data/plugins", changes: ["requirements": requirements, "http": ["io.appd.examples.Greeter.Hello", "io.appd.examples.Greeter.Count"]])
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"], directory: dir)
        _ = try await ExternalPluginTests.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        _ = try await run(
            Binaries.appctl, ["--socket", daemon.socket, "signup", "ada@example.com", "--password-stdin"], stdin: "a password\n",
            environment: ["XDG_CONFIG_HOME": daemon.directory + "/config"])
        let signIn = try await httpPost(port: port, path: "/v1/io.appd.Auth/SignIn", body: #"{"email":"ada@example.com","password":"a password"}"#)
        let token = ((try JSONSerialization.jsonObject(with: Data(signIn.body.utf8)) as? [String: Any])?["session"] as? [String: Any])?["accessToken"] as? String ?? ""
        let first = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Hello", body: #"{"name":"Bo"}"#, token: token, headers: [("Idempotency-Key", "hello-1")])
        let retry = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Hello", body: #"{"name":"Bo"}"#, token: token, headers: [("Idempotency-Key", "hello-1")])
        #expect(first.status == 200 && retry.status == 200 && retry.body == first.body, "\(first) \(retry)")
        let count = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Count", body: "{}")
        #expect(count.body.contains(#""count":1"#), "the plugin greeted once: \(count)")
        let reused = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Hello", body: #"{"name":"Al"}"#, token: token, headers: [("Idempotency-Key", "hello-1")])
        #expect(reused.status == 422 && reused.body.contains("IdempotencyKeyReused"), "\(reused)")
        // Count does not declare it: a key there is refused.
        let refused = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Count", body: "{}", headers: [("Idempotency-Key", "count-1")])
        #expect(refused.status == 400 && refused.body.contains("IdempotencyNotSupported"), "\(refused)")
        _ = await daemon.stop()
    }
}
