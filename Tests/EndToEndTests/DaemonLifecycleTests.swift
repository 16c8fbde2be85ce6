// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(2))) struct DaemonLifecycleTests {
    @Test func sigtermAndSigintExitZero() async throws {
        let first = try await Daemon.start()
        #expect(await first.stop(signal: SIGTERM) == 0)
        let second = try await Daemon.start()
        #expect(await second.stop(signal: SIGINT) == 0)
        #expect(!FileManager.default.fileExists(atPath: second.socket))
    }

    /// A built-in plugin whose configuration is refused is listed as failed with the reason;
    /// every other plugin runs (the plugins used to be built in one block, and a refused one
    /// vanished from the list).
    @Test func aPluginThatCannotBeBuiltFailsAloneAndIsListed() async throws {
        let daemon = try await Daemon.start(["--chat-provider", "openai", "--chat-base-url", "http://example.com/v1", "--chat-api-key", "sk-test"])
        let listed = try await daemon.ctl(["plugins", "--json"])
        #expect(listed.status == 0)
        let rows = listed.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let plugins = (rows.first?["plugins"] as? [[String: Any]]) ?? rows
        let states = Dictionary(uniqueKeysWithValues: plugins.compactMap { row in (row["name"] as? String).map { ($0, row) } })
        #expect(states["chat"]?["state"] as? String == "failed", "\(listed.stdout)")
        #expect((states["chat"]?["lastError"] as? String)?.contains("clear text") == true, "\(listed.stdout)")
        for name in ["auth", "todos", "payments", "rating"] {
            #expect(states[name]?["state"] as? String == "running", "\(name): \(listed.stdout)")
        }
        #expect(await daemon.stop() == 0)
    }

    /// appd loads libpq only when PostgreSQL is used: a daemon on SQLite (the default) maps
    /// neither libpq nor what it pulls in (Kerberos, LDAP, GnuTLS: ~3 MB resident at start).
    @Test func aDaemonOnSQLiteDoesNotLoadLibpq() async throws {
        let daemon = try await Daemon.start()
        // Read to the end (a /proc file reports no size).
        let file = try #require(FileHandle(forReadingAtPath: "/proc/\(daemon.process.processIdentifier)/maps"))
        let maps = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
        #expect(maps.contains("libsqlite3"), "the maps are appd's")
        for library in ["libpq.so", "libgnutls", "libkrb5", "libldap"] {
            #expect(!maps.contains(library), "\(library) is mapped")
        }
        #expect(await daemon.stop() == 0)
    }

    @Test func appctlShutdownStopsTheDaemon() async throws {
        let daemon = try await Daemon.start()
        let outcome = try await daemon.ctl(["shutdown"])
        #expect(outcome.status == 0)
        #expect(await daemon.exitStatus() == 0)
    }

    @Test func aSecondDaemonOnTheSameSocketExitsWithAClearMessage() async throws {
        let daemon = try await Daemon.start()
        let second = try await run(Binaries.appd, ["--socket", daemon.socket, "--data-dir", daemon.directory + "/second"], timeout: 10)
        #expect(second.status == 1)
        #expect(second.stderr.contains("another appd is already listening on \(daemon.socket)"))
        // The socket is checked first: the second never opened a database or started a plugin.
        #expect(!FileManager.default.fileExists(atPath: daemon.directory + "/second"))
        #expect(!second.stderr.contains("plugin"), "\(second.stderr)")
        #expect(try await daemon.ctl(["ping"]).status == 0)
        #expect(await daemon.stop() == 0)
    }

    @Test func aStaleSocketFromAKilledDaemonIsReplaced() async throws {
        let killed = try await Daemon.start()
        #expect(await killed.stop(signal: SIGKILL) == SIGKILL)
        #expect(FileManager.default.fileExists(atPath: killed.socket))
        let restarted = ChildProcess()
        restarted.executableURL = URL(fileURLWithPath: Binaries.appd)
        restarted.arguments = ["--socket", killed.socket, "--data-dir", killed.directory + "/data"]
        restarted.standardOutput = FileHandle.nullDevice
        restarted.standardError = FileHandle.nullDevice
        try restarted.run()
        #expect(await eventually { (try? await run(Binaries.appctl, ["--socket", killed.socket, "ping"]).status) == 0 })
        kill(restarted.processIdentifier, SIGTERM)
        await waitForExit(restarted, "appd after SIGTERM", within: .seconds(60))
        #expect(restarted.terminationStatus == 0)
    }

    @Test func theSocketIsOwnerOnly() async throws {
        let daemon = try await Daemon.start()
        let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socket)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(await daemon.stop() == 0)
    }

    @Test func unknownFlagsExit64AndBadValuesExit78() async throws {
        let unknown = try await run(Binaries.appd, ["--max-conections", "5"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("Did you mean '--max-connections'?"))
        let outcome = try await run(Binaries.appd, ["--max-connections", "zero"])
        #expect(outcome.status == 78)
        #expect(outcome.stderr.contains("maxConnections (from --max-connections) needs a positive whole number"))
        let help = try await run(Binaries.appd, ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: appd"))
    }
}

@Suite(.serialized, .timeLimit(.minutes(2))) struct DaemonRobustnessTests {
    /// Connects, sends `bytes`, and hangs up without reading anything.
    func hangUpAfterSending(_ bytes: [UInt8], to path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return false }
        return bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    @Test func clientsThatHangUpBeforeReadingNeverKillTheDaemon() async throws {
        let daemon = try await Daemon.start()
        let call = Array(#"{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.appd.Bus"}}"#.utf8) + [0]
        var batch: [UInt8] = []
        for _ in 0..<2000 { batch += call }
        for _ in 0..<5 { #expect(hangUpAfterSending(batch, to: daemon.socket)) }
        // Time for the daemon to answer into the closed connections (what used to kill it).
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await daemon.ctl(["ping"]).status == 0)
        #expect(await daemon.stop() == 0)
    }
}
