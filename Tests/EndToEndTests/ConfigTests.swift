// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(2))) struct ConfigTests {
    func printConfig(_ arguments: [String], environment: [String: String] = [:]) async throws -> (Int32, [String: Any], String) {
        let outcome = try await run(Binaries.appd, arguments + ["--print-config"], environment: environment)
        let json = (try? JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8))) as? [String: Any] ?? [:]
        return (outcome.status, json, outcome.stderr)
    }

    func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "appd-config-" + UUID().uuidString + ".json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func worksWithNoConfigurationAtAll() async throws {
        let (status, json, _) = try await printConfig([], environment: ["APPD_CONFIG": "", "XDG_CONFIG_HOME": "/nonexistent"])
        #expect(status == 0)
        #expect(json["maxConnections"] as? Int == 128)
        #expect(json["logLevel"] as? String == "info")
        #expect((json["socket"] as? String)?.hasSuffix("appd.sock") == true)
    }

    @Test func precedenceIsDefaultsThenFileThenEnvironmentThenFlags() async throws {
        let path = try file(#"{"maxConnections": 5, "maxQueuedCalls": 9, "logLevel": "debug", "callTimeoutSeconds": 2.5}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, json, _) = try await printConfig(
            ["--config", path, "--max-connections", "11"], environment: ["APPD_MAX_CONNECTIONS": "7", "APPD_MAX_QUEUED_CALLS": "8"])
        #expect(status == 0)
        #expect(json["maxConnections"] as? Int == 11)  // flag beats environment and file
        #expect(json["maxQueuedCalls"] as? Int == 8)  // environment beats file
        #expect(json["logLevel"] as? String == "debug")  // file beats default
        #expect(json["callTimeoutSeconds"] as? Double == 2.5)
    }

    @Test func theDatabaseIsSQLiteUnlessAPostgresURLIsGivenWhosePasswordIsNeverPrinted() async throws {
        #expect(try await printConfig([]).1["database"] as? String == "sqlite")
        let (status, json, stderr) = try await printConfig([], environment: ["APPD_DATABASE": "postgres://appd:s3cret-pw@db.internal:5432/app?sslmode=require"])
        #expect(status == 0)
        #expect(json["database"] as? String == "postgres://appd:***@db.internal:5432/app?sslmode=require")
        #expect(!stderr.contains("s3cret-pw"))
        let wrong = try await printConfig(["--database", "mysql://x"])
        #expect(wrong.0 == 78)
        #expect(wrong.2.contains("needs sqlite or a postgres:// URL"), "\(wrong.2)")
        #expect(!wrong.2.contains("mysql://x"), "a refused secret is not echoed: \(wrong.2)")
    }

    /// A server that cannot be reached stops appd at start with the reason and without the password.
    @Test func anUnreachablePostgresStopsAppdWithTheReasonNotThePassword() async throws {
        let dir = NSTemporaryDirectory() + "appd-pg-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try await run(
            Binaries.appd, ["--data-dir", dir, "--socket", dir + "/appd.sock"],
            environment: ["APPD_DATABASE": "postgresql://appd:s3cret-pw@127.0.0.1:1/app?connect_timeout=2"])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("cannot open the PostgreSQL database postgresql://appd:***@127.0.0.1:1/app"), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("s3cret-pw"))
    }

    @Test func theSessionCacheCanBeSizedOrTurnedOff() async throws {
        #expect(try await printConfig([]).1["sessionCacheEntries"] as? Int == 10_000)
        let off = try await printConfig(["--session-cache-entries", "0"])
        #expect(off.0 == 0)
        #expect(off.1["sessionCacheEntries"] as? Int == 0)
        let negative = try await printConfig([], environment: ["APPD_SESSION_CACHE_ENTRIES": "-1"])
        #expect(negative.0 == 78)
        #expect(negative.2.contains("sessionCacheEntries (from APPD_SESSION_CACHE_ENTRIES) needs a whole number from 0 to 10000000"))
    }

    /// The first hour: --print-config and status show the paths really used.
    @Test func resolvedPathsAreShown() async throws {
        let (status, json, _) = try await printConfig(["--data-dir", "/srv/appd-data"])
        #expect(status == 0)
        #expect(json["pluginDirectories"] as? [String] == ["/srv/appd-data/plugins", "/usr/lib/appd/plugins"])
        #expect(json.keys.contains("configFile"))
        let daemon = try await Daemon.start()
        let reply = try await daemon.ctl(["--json", "status"])
        let paths = (try JSONSerialization.jsonObject(with: Data(reply.stdout.utf8)) as? [String: Any])?["paths"] as? [String: Any]
        #expect(paths?["dataDirectory"] as? String == daemon.directory + "/data")
        #expect(paths?["socket"] as? String == daemon.socket)
        #expect(paths?["pluginDirectories"] as? [String] == [daemon.directory + "/data/plugins", "/usr/lib/appd/plugins"])
        #expect(await daemon.stop() == 0)
    }

    @Test func invalidConfigurationNamesTheKeyAndExits78() async throws {
        let unknown = try file(#"{"maxConections": 5}"#)
        let wrongType = try file(#"{"maxConnections": "many"}"#)
        let notJSON = try file("maxConnections = 5")
        defer { for p in [unknown, wrongType, notJSON] { try? FileManager.default.removeItem(atPath: p) } }
        let a = try await printConfig(["--config", unknown])
        #expect(a.0 == 78)
        #expect(a.2.contains("maxConections (from \(unknown)) is not a setting; did you mean 'maxConnections'?"))
        let b = try await printConfig(["--config", wrongType])
        #expect(b.0 == 78)
        #expect(b.2.contains("maxConnections (from \(wrongType)) needs a positive whole number"))
        let c = try await printConfig(["--config", notJSON])
        #expect(c.0 == 78)
        let d = try await printConfig(["--config", "/nonexistent/appd.json"])
        #expect(d.0 == 78)
        let e = try await printConfig([], environment: ["APPD_LOG_LEVEL": "loud"])
        #expect(e.0 == 78)
        #expect(e.2.contains("logLevel (from APPD_LOG_LEVEL)"))
        // Hardening finding 12: which of two equal keys wins must never be a question.
        let twice = try file(#"{"dataDirectory": "/var/lib/appd", "dataDirectory": "/tmp/elsewhere"}"#)
        defer { try? FileManager.default.removeItem(atPath: twice) }
        let f = try await printConfig(["--config", twice])
        #expect(f.0 == 78)
        #expect(f.2.contains("appears twice"), "\(f.2)")
    }

    /// A setting that was removed stops the start with its replacement named, wherever it is
    /// set — never ignored, never taken for a typo of another key.
    @Test func aRemovedSettingSaysWhatReplacedIt() async throws {
        let config = try file(#"{"webhookListen": "127.0.0.1:8787"}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let fromFile = try await printConfig(["--config", config])
        #expect(fromFile.0 == 78)
        #expect(fromFile.2.contains("webhookListen (from \(config)) was removed"), "\(fromFile.2)")
        #expect(fromFile.2.contains("set httpListen (--http-listen)"), "\(fromFile.2)")
        let fromEnvironment = try await printConfig([], environment: ["APPD_WEBHOOK_LISTEN": "127.0.0.1:8787"])
        #expect(fromEnvironment.0 == 78)
        #expect(fromEnvironment.2.contains("webhookListen (from APPD_WEBHOOK_LISTEN) was removed"), "\(fromEnvironment.2)")
        let fromFlag = try await printConfig(["--webhook-listen", "127.0.0.1:8787"])
        #expect(fromFlag.0 == 64)
        #expect(fromFlag.2.contains("--webhook-listen was removed"), "\(fromFlag.2)")
        #expect(fromFlag.2.contains("/webhooks/<provider>"), "\(fromFlag.2)")
    }

    @Test func applesServerSideNeedsItsKeysTogetherAndPrivate() async throws {
        let half = try await printConfig(["--apple-audiences", "com.example.app", "--apple-team-id", "TEAM123456"])
        #expect(half.0 == 78 && half.2.contains("needs appleTeamId, appleKeyId and applePrivateKeyFile"), "\(half.2)")
        let key = try file("-----BEGIN PRIVATE KEY-----\nnot really\n-----END PRIVATE KEY-----\n")
        let sealing = try file("AAAA\n")
        defer { for p in [key, sealing] { try? FileManager.default.removeItem(atPath: p) } }
        chmod(key, 0o644)
        let open = try await printConfig([
            "--apple-audiences", "com.example.app", "--apple-team-id", "TEAM123456", "--apple-key-id", "KEY1234567", "--apple-private-key-file", key,
            "--token-encryption-key-file", sealing,
        ])
        #expect(open.0 == 78 && open.2.contains("is readable by others; chmod 600 it"), "\(open.2)")
        chmod(key, 0o600)
        chmod(sealing, 0o600)
        let short = try await printConfig([
            "--apple-audiences", "com.example.app", "--apple-team-id", "TEAM123456", "--apple-key-id", "KEY1234567", "--apple-private-key-file", key,
            "--token-encryption-key-file", sealing,
        ])
        #expect(short.0 == 78 && short.2.contains("needs 32 bytes in base64"), "\(short.2)")
        let none = try await printConfig([
            "--apple-audiences", "com.example.app", "--apple-team-id", "TEAM123456", "--apple-key-id", "KEY1234567", "--apple-private-key-file", key,
        ])
        #expect(none.0 == 78 && none.2.contains("set tokenEncryptionKeyFile"), "\(none.2)")
        #expect(!(none.2 + short.2 + open.2).contains("not really"), "the key's text is never printed")
    }

    @Test func sighupReloadsAppliesWhatItCanAndSaysWhatNeedsARestart() async throws {
        // (The helper passes --log-level on the command line, which a file cannot override.)
        let path = try file(#"{"eventRetentionCount": 100, "maxConnections": 50}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let daemon = try await Daemon.start(["--config", path])
        try #"{"eventRetentionCount": 200, "maxConnections": 60}"#.write(toFile: path, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(await eventually { daemon.log.contains("configuration reloaded") })
        let log = daemon.log
        #expect(log.contains("applied=\"event retention\""))
        #expect(log.contains("needs.restart=limits"))
        // A broken file is refused and the daemon keeps running.
        try "{broken".write(toFile: path, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(await eventually { daemon.log.contains("reload refused") })
        #expect(try await daemon.ctl(["ping"]).status == 0)
        #expect(await daemon.stop() == 0)
    }

    /// The start log names the HTTP address as one address, with the port the kernel gave for 0
    /// (it said `http="127.0.0.1:0, port 33085"`).
    @Test func theStartLogNamesTheHTTPAddressItListensOn() async throws {
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:0"])
        // The socket may answer a ping a moment before the start line reaches the log.
        #expect(await eventually { daemon.log.contains("appd started") })
        let line = daemon.log.split(separator: "\n").first { $0.contains("appd started") }.map(String.init) ?? ""
        let field = line.split(separator: " ").first { $0.hasPrefix("http=") }.map(String.init) ?? ""
        let port = field.split(separator: ":").last.flatMap { Int($0) } ?? 0
        #expect(field.hasPrefix("http=127.0.0.1:") && port > 0, "\(line)")
        #expect(await daemon.stop() == 0)
    }
}
