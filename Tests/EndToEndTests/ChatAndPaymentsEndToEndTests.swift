// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// Chat and payments through the real binaries: appctl chat, the quota's exit code, an admin
/// grant, and Ctrl-C cancelling a streaming reply.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ChatAndPaymentsEndToEndTests {
    /// A daemon with a signed-in, onboarded user; appctl keeps its session in the daemon's directory.
    func signedIn(_ extra: [String]) async throws -> (Daemon, ([String], String?) async throws -> Outcome) {
        let daemon = try await Daemon.start(extra)
        let config = daemon.directory + "/config"
        let ctl = { (args: [String], stdin: String?) async throws -> Outcome in
            try await run(Binaries.appctl, ["--socket", daemon.socket] + args, stdin: stdin, environment: ["XDG_CONFIG_HOME": config])
        }
        #expect(try await ctl(["signup", "ada@example.com", "--password-stdin"], "a password\n").status == 0)
        #expect(try await ctl(["onboard"], nil).status == 0)
        return (daemon, ctl)
    }

    /// A new conversation's id.
    func newConversation(_ ctl: ([String], String?) async throws -> Outcome) async throws -> String {
        let conversation = try await ctl(["--json", "chat", "create-conversation"], nil)
        return try #require(conversation.stdout.split(separator: "\"").drop { $0 != "id" }.dropFirst(2).first.map(String.init))
    }

    /// appctl started with the daemon's session, its output on a pipe (for signals mid-run).
    func appctl(_ daemon: Daemon, _ arguments: [String], input: Pipe? = nil) throws -> (ChildProcess, Pipe) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: Binaries.appctl)
        process.arguments = ["--socket", daemon.socket] + arguments
        var env = ProcessInfo.processInfo.environment
        env["XDG_CONFIG_HOME"] = daemon.directory + "/config"
        process.environment = env
        let output = Pipe()
        if let input { process.standardInput = input }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output)
    }

    @Test func chatSendsRepliesAndTheFreeQuotaEndsWithExitCode68UntilProIsGranted() async throws {
        let (daemon, ctl) = try await signedIn(["--chat-echo-delay-ms", "1", "--payments-meters", "chat.messages=2/day/pro"])
        let first = try await ctl(["chat", "send", "hello", "world"], nil)
        #expect(first.status == 0 && first.stdout == "Echo: hello world\n", "\(first)")
        let piped = try await ctl(["chat"], "one\n\n/quit\nnever sent\n")
        #expect(piped.status == 0 && piped.stdout.hasPrefix("Echo: one\nconversation c_"), "\(piped)")
        let refused = try await ctl(["chat", "send", "three"], nil)
        #expect(refused.status == 68 && refused.stderr.contains("PaymentRequired"), "\(refused)")
        let status = try await ctl(["payments", "status"], nil)
        #expect(status.stdout.contains("chat.messages: 2 of 2 used"))
        let grant = try await ctl(["payments", "grant", "ada@example.com", "pro", "--reason", "e2e"], nil)
        #expect(grant.status == 0 && grant.stdout.contains("pro: active from admin"), "\(grant)")
        #expect(try await ctl(["chat", "send", "three"], nil).status == 0)
        let json = try await ctl(["--json", "chat", "send", "a", "b"], nil)
        let lines = json.stdout.split(separator: "\n")
        #expect(lines.count == 5)  // the id, three deltas, the stored message
        #expect(lines.last?.contains(#""status":"complete""#) == true)
        #expect(await daemon.stop() == 0)
    }

    @Test func ctrlCCancelsTheReplyAndTheCancelledMessageIsStored() async throws {
        let (daemon, ctl) = try await signedIn(["--chat-echo-delay-ms", "150"])
        let id = try await newConversation(ctl)
        let (process, out) = try appctl(daemon, ["chat", "send", "--conversation", id] + (1...30).map { "word\($0)" })
        // Wait for the reply to start streaming, then press Ctrl-C.
        var seen = Data()
        let reader = out.fileHandleForReading
        let deadline = Date().addingTimeInterval(10)
        while !String(decoding: seen, as: UTF8.self).contains("word2"), Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
            seen += reader.availableDataIfAny()
        }
        kill(process.processIdentifier, SIGINT)
        await waitForExit(process, "appctl chat send after Ctrl-C")
        seen += reader.availableDataIfAny()
        let output = String(decoding: seen, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.hasSuffix("[cancelled]\n") && !output.contains("word30"), "\(output)")
        let history = try await ctl(["chat", "history", id], nil)
        #expect(history.stdout.contains("assistant (cancelled): Echo: word1"), "\(history)")
        #expect(await daemon.stop() == 0)
    }

    @Test func ctrlCAtTheInteractivePromptKeepsTheChat() async throws {
        let (daemon, ctl) = try await signedIn(["--chat-echo-delay-ms", "1"])
        let id = try await newConversation(ctl)
        let input = Pipe()
        let (process, output) = try appctl(daemon, ["chat", "--conversation", id], input: input)
        input.fileHandleForWriting.write(Data("hello\n".utf8))
        // Wait until the reply is stored: appctl is then back at its prompt.
        #expect(try await eventually { try await ctl(["chat", "history", id], nil).stdout.contains("assistant: Echo: hello") })
        // The reply is stored just before appctl prints it and returns to its prompt.
        try await Task.sleep(for: .milliseconds(200))
        kill(process.processIdentifier, SIGINT)
        // Something that must not happen (the chat ending): give it a moment to happen.
        try await Task.sleep(for: .milliseconds(300))
        #expect(process.isRunning, "Ctrl-C at the prompt ended the chat")
        input.fileHandleForWriting.write(Data("again\n".utf8))
        try input.fileHandleForWriting.close()
        await waitForExit(process, "appctl chat after the end of its input")
        let text = String(decoding: output.fileHandleForReading.availableDataIfAny(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(text)")
        #expect(text.contains("Echo: hello\n") && text.contains("Echo: again\n") && text.hasSuffix("conversation \(id)\n"), "\(text)")
        #expect(await daemon.stop() == 0)
    }
}
