// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@Suite(.serialized, .timeLimit(.minutes(2))) struct AppctlHelpTests {
    @Test func helpFlagsAndHelpCommandPrintTheSameText() async throws {
        let a = try await run(Binaries.appctl, ["--help"])
        let b = try await run(Binaries.appctl, ["-h"])
        let c = try await run(Binaries.appctl, ["help"])
        #expect(a.status == 0)
        #expect(a.stdout == b.stdout)
        #expect(a.stdout == c.stdout)
        for section in ["OVERVIEW:", "USAGE: appctl", "OPTIONS:", "SUBCOMMANDS:", "EXIT CODES:"] {
            #expect(a.stdout.contains(section), "\(section)")
        }
        for command in ["ping", "status", "plugins", "shutdown", "call", "introspect", "info", "events", "bench", "completion"] {
            #expect(a.stdout.contains("\n  \(command) "), "\(command)")
        }
    }

    @Test func subcommandHelpIsTheSameEverywhere() async throws {
        let a = try await run(Binaries.appctl, ["help", "call"])
        let b = try await run(Binaries.appctl, ["call", "--help"])
        let c = try await run(Binaries.appctl, ["call", "-h"])
        #expect(a.status == 0)
        #expect(a.stdout == b.stdout && b.stdout == c.stdout)
        #expect(a.stdout.hasPrefix("OVERVIEW: Call any method with JSON parameters."))
        #expect(a.stdout.contains("USAGE: appctl call <method> [<json>] [--more] [--oneway]"))
    }

    @Test func usageErrorsExit64WithErrorAndUsage() async throws {
        let outcome = try await run(Binaries.appctl, ["--bogus"])
        #expect(outcome.status == 64)
        #expect(outcome.stderr.hasPrefix("Error: unknown option '--bogus'"))
        #expect(outcome.stderr.contains("Usage: appctl"))
        let typo = try await run(Binaries.appctl, ["ping", "--jsno"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("unknown option '--jsno'"))
        let timeout = try await run(Binaries.appctl, ["--timeout", "soon", "ping"])
        #expect(timeout.status == 64)
    }

    @Test func anUnreachableDaemonExits2AndSaysWhatToRun() async throws {
        let outcome = try await run(Binaries.appctl, ["--socket", "/nonexistent/appd.sock", "ping"])
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("appd is not running"))
        #expect(outcome.stderr.contains("Start it with 'appd'"))
        let env = try await run(Binaries.appctl, ["status"], environment: ["APPD_SOCKET": "/nonexistent/env.sock"])
        #expect(env.status == 2)
        #expect(env.stderr.contains("/nonexistent/env.sock"))
    }

    @Test func completionPrintsABashScript() async throws {
        let outcome = try await run(Binaries.appctl, ["completion", "bash"])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("complete -F _appctl appctl"))
        #expect(try await run(Binaries.appctl, ["completion", "fish"]).status == 64)
    }
}

@Suite(.serialized, .timeLimit(.minutes(2))) struct AppctlDaemonTests {
    @Test func pingStatusInfoAndIntrospect() async throws {
        let daemon = try await Daemon.start()
        let ping = try await daemon.ctl(["ping"])
        #expect(ping.status == 0)
        #expect(ping.stdout == "pong\n")

        let status = try await daemon.ctl(["status", "--json"])
        #expect(status.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(json?["version"] as? String == "0.1.0")
        #expect(json?["pid"] as? Int == Int(daemon.process.processIdentifier))

        let human = try await daemon.ctl(["status"])
        #expect(human.stdout.contains("version:"))
        #expect(human.stdout.contains("connections:"))
        // Durations for people, and the plugin table as 'appctl plugins' shows it.
        #expect(human.stdout.contains("uptime:") && !human.stdout.contains("uptimeSeconds"), "\(human.stdout)")
        let header = try await daemon.ctl(["plugins"]).stdout.split(separator: "\n").first.map(String.init) ?? "?"
        #expect(human.stdout.contains("  " + header + "\n"), "\(human.stdout)")
        // Extra words are an error everywhere, and a global option's typo is named as such.
        let extra = try await daemon.ctl(["status", "extra"])
        #expect(extra.status == 64 && extra.stderr.contains("status takes no arguments; 'extra' is one too many"))
        let typo = try await daemon.ctl(["--jsn", "ping"])
        #expect(typo.status == 64 && typo.stderr.contains("Did you mean '--json'?"), "\(typo.stderr)")

        let info = try await daemon.ctl(["info"])
        #expect(
            info.stdout.contains(
                "interfaces: io.appd.Auth, io.appd.Backup, io.appd.Bus, io.appd.Chat, io.appd.Console, io.appd.Daemon, io.appd.Export, io.appd.Files, io.appd.Payments, "
                    + "io.appd.Rating, io.appd.Settings, io.appd.Todos, org.varlink.service"
            ), "\(info.stdout)")

        let plugins = try await daemon.ctl(["plugins"])
        #expect(plugins.status == 0)
        #expect(plugins.stdout.hasPrefix("NAME      VERSION  KIND     STATE    RESTARTS  INTERFACES"))
        for (name, interface) in [("auth    ", "Auth"), ("todos   ", "Todos"), ("payments", "Payments"), ("chat    ", "Chat"), ("rating  ", "Rating")] {
            #expect(plugins.stdout.contains("\(name)  0.1.0    builtin  running  0         io.appd.\(interface)"), "\(plugins.stdout)")
        }

        let idl = try await daemon.ctl(["introspect", "daemon"])
        #expect(idl.stdout.contains("interface io.appd.Daemon"))
        #expect(idl.stdout.contains("method Status() -> ("))
        #expect(await daemon.stop() == 0)
    }

    @Test func commandsDerivedFromTheIDL() async throws {
        let daemon = try await Daemon.start()
        let status = try await daemon.ctl(["daemon", "status", "--json"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("\"version\":\"0.1.0\""))

        let help = try await daemon.ctl(["daemon", "--help"])
        #expect(help.stdout.contains("METHODS:"))
        #expect(help.stdout.contains("  status"))
        #expect(help.stdout.contains("What the daemon is doing now."))

        let methodHelp = try await daemon.ctl(["help", "bus", "publish"])
        #expect(methodHelp.stdout.contains("USAGE: appctl bus publish --topic <string> --payload <json>"))

        let typo = try await daemon.ctl(["daemon", "stauts"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("Did you mean 'status'?"))

        let missing = try await daemon.ctl(["bus", "publish", "--topic", "x.y"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("missing --payload"))

        let published = try await daemon.ctl(["bus", "publish", "--topic", "demo.one", "--payload", "{\"n\":1}"])
        #expect(published.status == 0)

        let unknownSubcommand = try await daemon.ctl(["stauts"])
        #expect(unknownSubcommand.status == 64)
        #expect(unknownSubcommand.stderr.contains("Did you mean 'status'?"))
        #expect(await daemon.stop() == 0)
    }

    @Test func callTakesJSONFromArgumentsOrStdinAndMapsErrorsToExitCodes() async throws {
        let daemon = try await Daemon.start()
        let ok = try await daemon.ctl(["--json", "call", "io.appd.Daemon.Ping"])
        #expect(ok.status == 0)
        #expect(ok.stdout == "{}\n")
        let stdin = try await daemon.ctl(["call", "io.appd.Daemon.Status", "--json"], stdin: "{}")
        #expect(stdin.stdout.contains("\"version\""))
        let invalid = try await daemon.ctl(["call", "io.appd.Daemon.Ping", "{\"x\":1}"])
        #expect(invalid.status == 65)
        #expect(invalid.stderr.contains("org.varlink.service.InvalidParameter"))
        let notFound = try await daemon.ctl(["call", "io.appd.Daemon.Nope"])
        #expect(notFound.status == 69)
        let badJSON = try await daemon.ctl(["call", "io.appd.Daemon.Ping", "{nope"])
        #expect(badJSON.status == 64)
        #expect(await daemon.stop() == 0)
    }

    @Test func eventsTailStreamsPublishedEvents() async throws {
        let daemon = try await Daemon.start()
        let tail = ChildProcess()
        tail.executableURL = URL(fileURLWithPath: Binaries.appctl)
        tail.arguments = ["--socket", daemon.socket, "--json", "events", "tail", "demo.*"]
        let out = Pipe()
        tail.standardOutput = out
        tail.standardError = FileHandle.nullDevice
        try tail.run()
        var seen = ""
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline && !seen.contains("demo.hello") {
            _ = try await daemon.ctl(["call", "io.appd.Bus.Publish", "{\"topic\":\"demo.hello\",\"payload\":{\"n\":7}}"])
            _ = try await daemon.ctl(["call", "io.appd.Bus.Publish", "{\"topic\":\"other.thing\",\"payload\":{}}"])
            try await Task.sleep(for: .milliseconds(200))
            seen += String(decoding: out.fileHandleForReading.availableDataIfAny(), as: UTF8.self)
        }
        tail.terminate()
        await waitForExit(tail, "appctl events tail after SIGTERM")
        let line = seen.split(separator: "\n").first { $0.contains("demo.hello") }.map(String.init) ?? ""
        let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(event?["topic"] as? String == "demo.hello")
        #expect((event?["payload"] as? [String: Any])?["n"] as? Int == 7)
        #expect(!seen.contains("other.thing"))
        // Each event says where it came from: its id, its conversation, its cause.
        #expect((event?["id"] as? String)?.isEmpty == false && event?["correlationId"] as? String != nil && event?["causationId"] as? String != nil)
        #expect(event?["version"] as? Int == 1)
        #expect(await daemon.stop() == 0)
    }

    /// A command that succeeds with nothing to show says what happened (issue 35 item 6); with
    /// --json the reply stays the reply.
    @Test func aSuccessWithNothingToShowSaysWhatHappened() async throws {
        let daemon = try await Daemon.start()
        let reset = try await daemon.ctl(["auth", "request-password-reset", "--email", "nobody@example.com"])
        #expect(reset.status == 0 && reset.stdout == "If an account has that address, a reset mail is on its way (appd says the same either way).\n", "\(reset)")
        let published = try await daemon.ctl(["bus", "publish", "--topic", "demo.hello", "--payload", #"{"n": 1}"#])
        #expect(published.status == 0 && published.stdout.hasPrefix("Published (live only"), "\(published)")
        let durable = try await daemon.ctl(["bus", "publish", "--topic", "demo.hello", "--payload", #"{"n": 2}"#, "--durable"])
        #expect(durable.status == 0 && durable.stdout.contains("seq"), "a reply with something in it is shown: \(durable)")
        let json = try await daemon.ctl(["--json", "auth", "request-password-reset", "--email", "nobody@example.com"])
        #expect(json.status == 0 && json.stdout == "{}\n", "\(json)")
        #expect(await daemon.stop() == 0)
    }

    @Test func eventsTopicsListsEveryPluginTopicAndPublishRefusesThem() async throws {
        let daemon = try await Daemon.start()
        let topics = try await daemon.ctl(["events", "topics"])
        #expect(topics.status == 0)
        let row = topics.stdout.split(separator: "\n").first { $0.hasPrefix("auth.passwordResetRequested ") }.map(String.init) ?? ""
        #expect(row.contains("owner") && row.contains("auth") && row.contains("(requestId: string, userId: string, email: string, expiresAt: string)"), "\(topics.stdout)")
        let json = try await daemon.ctl(["--json", "events", "topics"])
        let list = (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["topics"] as? [[String: Any]]
        #expect(topics.stdout.split(separator: "\n").count == (list?.count ?? -1) + 1, "a header and a row per topic")
        let names = Set(list?.compactMap { $0["topic"] as? String } ?? [])
        #expect(["auth.userSignedUp", "auth.identityLinked", "todos.created", "payments.entitlementChanged"].allSatisfy(names.contains), "\(names)")
        #expect(list?.first { $0["topic"] as? String == "auth.accountDeleted" }?["audience"] as? String == "admin")
        let forged = try await daemon.ctl(["call", "io.appd.Bus.Publish", "{\"topic\":\"auth.accountDeleted\",\"payload\":{\"userId\":\"u_1\"},\"durable\":true}"])
        #expect(forged.status != 0 && forged.stderr.contains("TopicOwned"), "\(forged.stderr)")
        #expect(await daemon.stop() == 0)
    }
}

extension FileHandle {
    /// What is readable now without blocking (empty when nothing is).
    func availableDataIfAny() -> Data {
        let fd = fileDescriptor
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return data
    }
}
