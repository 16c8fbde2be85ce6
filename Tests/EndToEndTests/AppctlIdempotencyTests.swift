// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// `appctl call --idempotency-key`: a script's retried write has its effect once.
@Suite(.timeLimit(.minutes(2))) struct AppctlIdempotencyTests {
    @Test func aRetriedCallWithItsKeyAddsOneTodo() async throws {
        let daemon = try await Daemon.start()
        let config = daemon.directory + "/config"
        func ctl(_ args: [String], stdin: String? = nil) async throws -> Outcome {
            try await run(Binaries.appctl, ["--socket", daemon.socket] + args, stdin: stdin, environment: ["XDG_CONFIG_HOME": config])
        }
        #expect(try await ctl(["signup", "ada@example.com", "--password-stdin"], stdin: "correct horse\n").status == 0)
        #expect(try await ctl(["onboard"]).status == 0)
        let add = ["--json", "call", "io.appd.Todos.Add", #"{"title": "once"}"#, "--idempotency-key", "script-run-1"]
        let first = try await ctl(add), again = try await ctl(add)
        #expect(first.status == 0 && again.status == 0 && first.stdout == again.stdout, "\(first) \(again)")
        let list = try await ctl(["--json", "todos", "ls"])
        #expect(list.stdout.split(separator: "\n").count == 1, "\(list)")
        let reused = try await ctl(["call", "io.appd.Todos.Add", #"{"title": "other"}"#, "--idempotency-key", "script-run-1"])
        #expect(reused.status == 1 && reused.stderr.contains("IdempotencyKeyReused"), "\(reused)")
        let streamed = try await ctl(["call", "io.appd.Bus.Subscribe", #"{"topics": ["todos.>"]}"#, "--more", "--idempotency-key", "k"])
        #expect(streamed.status == 64)
        #expect(await daemon.stop() == 0)
    }
}
