// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// External plugins through the real binaries: appd spawns the Swift example plugin
/// (appd-plugin-greeter, built beside the tests) from a plugin folder and routes calls to it.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ExternalPluginTests {
    static var manifest: [String: Any] {
        [
            "name": "greeter", "version": "1.0.0", "executable": "appd-plugin-greeter", "interfaces": ["io.appd.examples.Greeter"],
            "requirements": [
                "io.appd.examples.Greeter.Hello": ["session"], "io.appd.examples.Greeter.Slow": [String](),
                "io.appd.examples.Greeter.Count": [String](), "io.appd.examples.Greeter.Publish": ["admin"],
                "io.appd.examples.Greeter.Environment": ["admin"], "io.appd.examples.Greeter.Countdown": [String](),
            ],
            "publishes": ["greeter.>"], "callTimeoutSeconds": 1, "streamIdleTimeoutSeconds": 2,
            "restart": ["policy": "on-failure", "maxRetries": 2, "backoffSeconds": 0.1, "maxBackoffSeconds": 0.5],
            // In its sandbox it sees /usr, /etc and its folder: the Swift runtime it links is added.
            "sandbox": ["readOnlyPaths": [Binaries.swiftRuntime]],
        ]
    }

    /// Writes a plugin folder with `manifest` (overridden by `changes`) and the greeter binary.
    static func install(in plugins: String, folder: String = "greeter", changes: [String: Any] = [:], mode: Int = 0o644) throws {
        let dir = plugins + "/" + folder
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var manifest = Self.manifest
        for (k, v) in changes { manifest[k] = v }
        let path = dir + "/plugin.json"
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        try? FileManager.default.removeItem(atPath: dir + "/appd-plugin-greeter")
        // A copy, not a link: the sandbox shows the plugin its own folder, not the build's.
        // Written through an O_CLOEXEC descriptor: a process another test spawns meanwhile must
        // not inherit it open for writing (its appd would then exec the plugin: Text file busy).
        let binary = try Data(contentsOf: URL(fileURLWithPath: Binaries.directory + "/appd-plugin-greeter"))
        let fd = open(dir + "/appd-plugin-greeter", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw HarnessError("cannot write the plugin's binary: errno \(errno)") }
        defer { close(fd) }
        let written = binary.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == binary.count else { throw HarnessError("short write of the plugin's binary") }
    }

    static func newDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "appd-ext-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir + "/data/plugins", withIntermediateDirectories: true)
        return dir
    }

    /// appctl with a session store of the daemon's own.
    static func ctl(_ daemon: Daemon, _ args: [String]) async throws -> Outcome {
        try await run(Binaries.appctl, ["--socket", daemon.socket] + args, environment: ["XDG_CONFIG_HOME": daemon.directory + "/config"])
    }

    static func plugin(_ daemon: Daemon, _ name: String) async throws -> [String: Any] {
        let out = try await ctl(daemon, ["--json", "plugins"])
        let json = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        let list = json?["plugins"] as? [[String: Any]] ?? []
        return list.first { $0["name"] as? String == name } ?? [:]
    }

    /// Polls until `done` holds for the plugin's status (or 30 s pass: a plugin process starts
    /// slowly when the whole suite starts dozens of daemons on two cores at once). Not reaching
    /// it is an issue of its own, so a later failure is not misread as the method's.
    static func wait(
        _ daemon: Daemon, _ name: String, sourceLocation: SourceLocation = #_sourceLocation, until done: ([String: Any]) -> Bool
    ) async throws -> [String: Any] {
        var status: [String: Any] = [:]
        let reached = try await eventually(timeout: .seconds(30)) {
            status = try await plugin(daemon, name)
            return done(status)
        }
        #expect(reached, "the plugin's status never got there: \(status)", sourceLocation: sourceLocation)
        return status
    }

    /// A plugin whose manifest does not let it publish what it publishes: its caller gets
    /// appd's refusal with what to fix (TopicNotDeclared naming the topic, 403), not an
    /// InternalError.
    @Test func aPublishTheManifestDoesNotAllowReachesTheCallerWithItsReason() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins", changes: ["http": ["io.appd.examples.Greeter.Hello"], "publishes": ["other.>"]])
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"], directory: dir)
        _ = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        _ = try await run(
            Binaries.appctl, ["--socket", daemon.socket, "signup", "bo@example.com", "--password-stdin"], stdin: "a password\n",
            environment: ["XDG_CONFIG_HOME": daemon.directory + "/config"])
        let signIn = try await httpPost(port: port, path: "/v1/io.appd.Auth/SignIn", body: #"{"email":"bo@example.com","password":"a password"}"#)
        let session = (try JSONSerialization.jsonObject(with: Data(signIn.body.utf8)) as? [String: Any])?["session"] as? [String: Any]
        let hello = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Hello", body: "{}", token: session?["accessToken"] as? String ?? "")
        #expect(hello.status == 403, "\(hello)")
        #expect(hello.body.contains("io.appd.Bus.TopicNotDeclared") && hello.body.contains(#""topic":"greeter.greeted""#), "\(hello)")
        #expect(!hello.body.contains("InternalError"), "\(hello)")
        #expect(await daemon.stop() == 0)
    }

    /// Over the HTTP API only the methods the manifest lists under "http" are routed; the
    /// plugin sees the HTTP caller as a user with no uid.
    @Test func onlyMethodsMarkedForHTTPAreRoutedThere() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins", changes: ["http": ["io.appd.examples.Greeter.Hello", "io.appd.examples.Greeter.Count"]])
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"], directory: dir)
        _ = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        _ = try await run(
            Binaries.appctl, ["--socket", daemon.socket, "signup", "ada@example.com", "--password-stdin"], stdin: "a password\n",
            environment: ["XDG_CONFIG_HOME": daemon.directory + "/config"])
        let signIn = try await httpPost(port: port, path: "/v1/io.appd.Auth/SignIn", body: #"{"email":"ada@example.com","password":"a password"}"#)
        let session = (try JSONSerialization.jsonObject(with: Data(signIn.body.utf8)) as? [String: Any])?["session"] as? [String: Any]
        let token = session?["accessToken"] as? String ?? ""
        #expect(!token.isEmpty, "\(signIn)")
        let hello = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Hello", body: "{}", token: token)
        #expect(hello.status == 200 && hello.body.contains("Hello, ada@example.com!"), "\(hello)")
        let greeting = try JSONSerialization.jsonObject(with: Data(hello.body.utf8)) as? [String: Any]
        #expect(greeting?["roles"] as? [String] == ["user"], "an HTTP caller is a user, never an admin: \(hello)")
        let anonymous = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Hello", body: "{}")
        #expect(anonymous.status == 401, "\(anonymous)")
        // Not listed under "http": not routed, and not in the OpenAPI document.
        let slow = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Slow", body: "{}", token: token)
        #expect(slow.status == 404, "\(slow)")
        let document = try await httpGet(port: port, path: "/openapi.json")
        #expect(document.contains("/v1/io.appd.examples.Greeter/Hello") && !document.contains("/v1/io.appd.examples.Greeter/Slow"))
        #expect(!document.contains("\"caller\""), "the field appd fills in is not offered to clients")
        // Listed but admin-only in its requirements: still not routed.
        try Self.install(in: dir + "/data/plugins", changes: ["http": ["io.appd.examples.Greeter.Environment"]])
        _ = try await Self.ctl(daemon, ["plugins", "rescan"])
        _ = try await eventually { try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Hello", body: "{}", token: token).status == 404 }
        let environment = try await httpPost(port: port, path: "/v1/io.appd.examples.Greeter/Environment", body: "{}", token: token)
        #expect(environment.status == 404, "\(environment)")
        #expect(await daemon.stop() == 0)
    }

    @Test func spawnRouteGatesCallerAndScope() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins")
        let daemon = try await Daemon.start(environment: ["APPD_TEST_SECRET": "must not leak"], directory: dir)
        let status = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        #expect(status["kind"] as? String == "external" && (status["pid"] as? Int ?? 0) > 0, "\(status)")
        #expect(status["interfaces"] as? [String] == ["io.appd.examples.Greeter"])

        // The manifest's requirements are enforced by the same gates as built-in plugins.
        let anonymous = try await Self.ctl(daemon, ["greeter", "hello", "--name", "Ada"])
        #expect(anonymous.status == 67, "\(anonymous)")
        _ = try await run(
            Binaries.appctl, ["--socket", daemon.socket, "signup", "ada@example.com", "--password-stdin"], stdin: "a password\n",
            environment: ["XDG_CONFIG_HOME": daemon.directory + "/config"])
        let me = try await Self.ctl(daemon, ["--json", "whoami"])
        let hello = try await Self.ctl(daemon, ["--json", "greeter", "hello"])
        #expect(hello.status == 0, "\(hello)")
        // appd filled in the caller: the plugin saw the signed-in user.
        let userID = (try JSONSerialization.jsonObject(with: Data(me.stdout.utf8)) as? [String: Any]).flatMap { ($0["user"] as? [String: Any])?["id"] as? String }
        let greeting = try JSONSerialization.jsonObject(with: Data(hello.stdout.utf8)) as? [String: Any]
        #expect(greeting?["greeting"] as? String == "Hello, ada@example.com!")
        #expect(greeting?["userId"] as? String == userID && userID != nil)
        #expect((greeting?["roles"] as? [String])?.contains("user") == true)
        // A client is not offered it and cannot forge it: appctl says so, appd refuses it.
        let help = try await Self.ctl(daemon, ["greeter", "hello", "--help"])
        #expect(help.status == 0 && help.stdout.contains("--name") && !help.stdout.contains("--caller") && !help.stdout.contains("<Caller>"), "\(help)")
        let forged = try await Self.ctl(daemon, ["greeter", "hello", "--caller", #"{"uid":0,"userId":"u_admin","roles":["admin"]}"#])
        #expect(forged.status == 64 && forged.stderr.contains("--caller is filled in by appd"), "\(forged)")
        let raw = try await Self.ctl(daemon, ["call", "io.appd.examples.Greeter.Hello", #"{"caller":{"uid":0,"userId":"u_admin","email":null,"roles":["admin"]}}"#])
        #expect(raw.status == 65 && raw.stderr.contains("caller"), "\(raw)")

        // The plugin's own connection may publish what its manifest declares, nothing else.
        let allowed = try await Self.ctl(daemon, ["--json", "greeter", "publish", "--topic", "greeter.test"])
        #expect(allowed.stdout.contains(#""published":true"#), "\(allowed)")
        let denied = try await Self.ctl(daemon, ["--json", "greeter", "publish", "--topic", "auth.userSignedUp"])
        #expect(denied.stdout.contains(#""published":false"#) && denied.stdout.contains("TopicNotDeclared"), "\(denied)")

        // A slow call hits the plugin's call timeout; other calls keep being served meanwhile.
        let socket = daemon.socket, config = daemon.directory + "/config"
        let slow = Task { try await run(Binaries.appctl, ["--socket", socket, "greeter", "slow", "--seconds", "3"], environment: ["XDG_CONFIG_HOME": config]) }
        // Until the slow call is in flight (nothing outside the plugin shows it).
        try await Task.sleep(for: .milliseconds(200))
        let count = try await Self.ctl(daemon, ["greeter", "count"])
        #expect(count.status == 0 && count.stdout.contains("count: 1"), "\(count)")
        let timedOut = try await slow.value
        #expect(timedOut.status == 75 && timedOut.stderr.contains("DeadlineExceeded"), "\(timedOut)")

        // Its environment is the allow-list (none here) and what it needs to find appd (the
        // LISTEN_* variables were there too; taking the socket removes them).
        let env = try await Self.ctl(daemon, ["--json", "greeter", "environment"])
        let names = (try JSONSerialization.jsonObject(with: Data(env.stdout.utf8)) as? [String: Any])?["names"] as? [String]
        #expect(
            names == ["APPD_PLUGIN_DATA", "APPD_PLUGIN_NAME", "APPD_PLUGIN_TOKEN", "APPD_SOCKET", "PATH"],
            "\(env)")

        // A streaming method is streamed through (appctl asks again with 'more' when told to).
        let countdown = try await Self.ctl(daemon, ["--json", "greeter", "countdown", "--from", "3"])
        #expect(countdown.status == 0 && countdown.stdout == "{\"n\":3}\n{\"n\":2}\n{\"n\":1}\n{\"n\":0}\n", "\(countdown)")
        // A stream may go quiet for longer than a call may take (1 s), up to
        // streamIdleTimeoutSeconds (2 s) between replies; quieter than that, it ends.
        let patient = try await Self.ctl(daemon, ["--json", "greeter", "countdown", "--from", "1", "--every-ms", "1400"])
        #expect(patient.status == 0 && patient.stdout == "{\"n\":1}\n{\"n\":0}\n", "\(patient)")
        let quiet = try await Self.ctl(daemon, ["--json", "greeter", "countdown", "--from", "1", "--every-ms", "3000"])
        #expect(quiet.status == 75 && quiet.stdout == "{\"n\":1}\n" && quiet.stderr.contains("DeadlineExceeded"), "\(quiet)")

        // A restart lets a call in flight finish first.
        let inFlight = Task { try await run(Binaries.appctl, ["--socket", socket, "greeter", "slow", "--seconds", "0.6"], environment: ["XDG_CONFIG_HOME": config]) }
        // Until the call is in flight (nothing outside the plugin shows it).
        try await Task.sleep(for: .milliseconds(150))
        #expect(try await Self.ctl(daemon, ["plugins", "restart", "greeter"]).status == 0)
        let drained = try await inFlight.value
        #expect(drained.status == 0, "\(drained)")

        // Its output goes to appd's log, prefixed with its name.
        #expect(await eventually { daemon.log.contains("[greeter]") })
        let restarted = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" && $0["pid"] as? Int != nil }
        let pid = Int32(restarted["pid"] as? Int ?? 0)
        #expect(pid > 0, "\(restarted)\n\(daemon.log.suffix(3000))")
        #expect(await daemon.stop() == 0)
        // Stopping appd stops the plugin (in its sandbox it is bwrap's grandchild: once gone it
        // may linger as a zombie for whoever inherited it).
        #expect(Self.isGone(pid), "plugin \(pid) still runs after appd stopped")
    }

    /// Whether a process is gone (or only a zombie left for its new parent to reap).
    static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    @Test func aPluginGetsNoStrayDescriptorsAndDoesNotOutliveAKilledAppd() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins")
        // (appd inherits a descriptor from this test process that is not close-on-exec:
        // Foundation's child-watching socket.)
        let daemon = try await Daemon.start(directory: dir)
        let status = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        let pid = Int32(status["pid"] as? Int ?? 0)
        #expect(pid > 0 && !Self.isGone(pid))
        let env = try await Self.ctl(daemon, ["--json", "greeter", "environment"])
        let descriptors = (try JSONSerialization.jsonObject(with: Data(env.stdout.utf8)) as? [String: Any])?["descriptors"] as? [String] ?? []
        // Exactly stdin (/dev/null), stdout and stderr (pipes to appd's log) and the socket.
        let numbers = descriptors.compactMap { $0.split(separator: " ").first.flatMap { Int($0) } }
        #expect(numbers == [0, 1, 2, 3], "\(descriptors)")
        #expect(descriptors.first == "0 -> /dev/null" && descriptors.last?.hasPrefix("3 -> socket:") == true, "\(descriptors)")
        // No chance to stop its plugins: the kernel's parent-death signal does it.
        #expect(await daemon.stop(signal: SIGKILL) != 0)
        #expect(await eventually { Self.isGone(pid) }, "plugin \(pid) still runs after appd was killed")
    }

    @Test func aKilledPluginFailsFastThenIsRestartedAndServesAgain() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins")
        let daemon = try await Daemon.start(directory: dir)
        let first = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        let pid = Int32(first["pid"] as? Int ?? 0)
        #expect(pid > 0)
        kill(pid, SIGKILL)
        // Until it is back, calls fail fast with PluginUnavailable (not a hang).
        var sawUnavailable = false
        for _ in 0..<50 {
            let started = Date()
            let call = try await Self.ctl(daemon, ["greeter", "count"])
            if call.stderr.contains("io.appd.Daemon.PluginUnavailable") {
                sawUnavailable = true
                #expect(call.status == 75 && Date().timeIntervalSince(started) < 1)
                break
            }
            if call.status == 0 && !call.stdout.contains("count: 0") { continue }
        }
        let again = try await Self.wait(daemon, "greeter") { ($0["pid"] as? Int).map { Int32($0) != pid } == true && $0["state"] as? String == "running" }
        #expect(again["restarts"] as? Int == 1, "\(again)")
        #expect((again["lastError"] as? String ?? "").contains("killed by signal 9") || sawUnavailable, "\(again)")
        let count = try await Self.ctl(daemon, ["greeter", "count"])
        #expect(count.status == 0 && count.stdout.contains("count: 0"), "\(count)")  // a new process
        // A manual restart, then disable (kept across restarts of appd) and enable.
        #expect(try await Self.ctl(daemon, ["plugins", "restart", "greeter"]).stdout == "restarted greeter\n")
        #expect(try await Self.ctl(daemon, ["plugins", "disable", "greeter"]).status == 0)
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).stderr.contains("PluginUnavailable"))
        #expect(try await Self.ctl(daemon, ["plugins", "restart", "nope"]).stderr.contains("UnknownPlugin"))
        #expect(await daemon.stop() == 0)
        let restarted = try await Daemon.start(reusing: daemon)
        #expect(try await Self.plugin(restarted, "greeter")["state"] as? String == "stopped")
        #expect(try await Self.ctl(restarted, ["plugins", "enable", "greeter"]).status == 0)
        #expect(try await Self.ctl(restarted, ["greeter", "count"]).status == 0)
        #expect(await restarted.stop() == 0)
    }

    @Test func aPluginThatStopsAnsweringFailsItsHealthCheckAndIsRestarted() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins")
        let daemon = try await Daemon.start(["--plugin-health-interval", "0.3"], directory: dir)
        let first = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        let pid = Int32(first["pid"] as? Int ?? 0)
        kill(pid, SIGSTOP)  // alive, but answers nothing
        let again = try await Self.wait(daemon, "greeter") { ($0["pid"] as? Int).map { Int32($0) != pid } == true && $0["state"] as? String == "running" }
        #expect((again["pid"] as? Int).map { Int32($0) != pid } == true, "\(again)")
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status == 0)
        #expect(await eventually { daemon.log.contains("failed its health check") })
        #expect(await daemon.stop() == 0)
    }

    /// A Swift plugin built without the runtime linked in, in a sandbox that does not show the
    /// toolchain's libraries: refused before it starts, naming the library and the fix (it
    /// would otherwise exit 127 with a loader error).
    @Test(.enabled(if: !Binaries.swiftRuntime.hasPrefix("/usr/"), "the Swift runtime lies in what every sandbox shows"))
    func aProgramWhoseLibrariesTheSandboxDoesNotShowIsRefusedWithTheFix() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins", changes: ["sandbox": [String: Any]()])
        let daemon = try await Daemon.start(directory: dir)
        let status = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "failed" }
        let reason = status["lastError"] as? String ?? ""
        #expect(reason.contains("its program needs libswift") && reason.contains(Binaries.swiftRuntime), "\(status)")
        #expect(reason.contains("--static-swift-stdlib") && reason.contains("sandbox.readOnlyPaths"), "\(status)")
        #expect(status["restarts"] as? Int == 0, "a permanent refusal is not retried: \(status)")
        #expect(await daemon.stop() == 0)
    }

    @Test func aPluginThatExitsAtOnceBacksOffThenFails() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins", changes: ["arguments": ["--exit-at-once"]])
        let daemon = try await Daemon.start(directory: dir)
        let status = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "failed" }
        #expect(status["state"] as? String == "failed", "\(status)")
        #expect(status["restarts"] as? Int == 2)
        #expect((status["lastError"] as? String ?? "").contains("exited with status 3"), "\(status)")
        #expect((status["lastError"] as? String ?? "").contains("gave up"), "\(status)")
        // appd itself is fine.
        #expect(try await Self.ctl(daemon, ["ping"]).status == 0)
        #expect(await daemon.stop() == 0)
    }

    @Test func anInterfaceThatDoesNotMatchTheManifestIsRefusedWithTheReason() async throws {
        let dir = try Self.newDirectory()
        try Self.install(in: dir + "/data/plugins", changes: ["arguments": ["--serve-interface", "io.appd.examples.Impostor"]])
        let daemon = try await Daemon.start(directory: dir)
        let status = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "failed" }
        #expect((status["lastError"] as? String ?? "").contains("serves io.appd.examples.Impostor but its manifest declares io.appd.examples.Greeter"), "\(status)")
        #expect(status["restarts"] as? Int == 0)
        let info = try await Self.ctl(daemon, ["info"])
        #expect(!info.stdout.contains("Impostor"))
        #expect(await daemon.stop() == 0)
    }

    @Test func rescanBrokenManifestsShadowingAndUnsafeFiles() async throws {
        let dir = try Self.newDirectory()
        let plugins = dir + "/data/plugins"
        // A broken manifest and a world-writable one are reported and skipped, never fatal.
        try FileManager.default.createDirectory(atPath: plugins + "/broken", withIntermediateDirectories: true)
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: plugins + "/broken/plugin.json"))
        try Self.install(in: plugins, folder: "unsafe", changes: ["name": "unsafe"], mode: 0o666)
        let daemon = try await Daemon.start(directory: dir)
        #expect(try await Self.plugin(daemon, "broken")["state"] as? String == "failed")
        #expect((try await Self.plugin(daemon, "broken")["lastError"] as? String ?? "").contains("not JSON"))
        #expect((try await Self.plugin(daemon, "unsafe")["lastError"] as? String ?? "").contains("writable by other users"))
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status != 0)

        // A new folder is picked up without restarting appd; a second of the same name is shadowed.
        try Self.install(in: plugins, folder: "a-greeter")
        try Self.install(in: plugins, folder: "b-greeter")
        let rescan = try await Self.ctl(daemon, ["plugins", "rescan"])
        #expect(rescan.stdout.contains("added: greeter"), "\(rescan)")
        // It says where it looked and why it skipped what it skipped.
        #expect(rescan.stdout.hasPrefix("scanned: \(plugins) (4 folder(s)), /usr/lib/appd/plugins (missing)"), "\(rescan.stdout)")
        #expect(rescan.stdout.contains("skipped: \(plugins)/broken: plugin.json is not JSON"), "\(rescan.stdout)")
        #expect(rescan.stdout.contains("skipped: \(plugins)/b-greeter: shadowed"), "\(rescan.stdout)")
        _ = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status == 0)
        #expect((try await Self.plugin(daemon, "b-greeter")["lastError"] as? String ?? "").contains("shadowed"))
        // A changed manifest is picked up: the plugin restarts with it (here: Count needs a session now).
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status == 0)
        var manifest = Self.manifest
        var requirements = manifest["requirements"] as? [String: [String]] ?? [:]
        requirements["io.appd.examples.Greeter.Count"] = ["session"]
        manifest["requirements"] = requirements
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: plugins + "/a-greeter/plugin.json"))
        let before = try await Self.plugin(daemon, "greeter")["pid"] as? Int
        let changed = try await Self.ctl(daemon, ["plugins", "rescan"])
        #expect(changed.stdout.contains("changed: greeter"), "\(changed)")
        // Running again means a new process (the old one may still show as running for a moment).
        _ = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" && ($0["pid"] as? Int).map { $0 != before } == true }
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status == 67)
        // Removed folders are dropped, and their interface is no longer served.
        try FileManager.default.removeItem(atPath: plugins + "/a-greeter")
        try FileManager.default.removeItem(atPath: plugins + "/b-greeter")
        #expect(try await Self.ctl(daemon, ["plugins", "rescan"]).stdout.contains("removed: greeter"))
        let gone = try await Self.ctl(daemon, ["greeter", "count"])
        #expect(gone.status == 64, "\(gone)")  // appctl no longer knows the command: nothing serves it
        #expect(await daemon.stop() == 0)
    }

    /// Hardening finding 7: the executable and the directories above it are checked before
    /// every spawn, not only at scan time.
    @Test func aPluginWhoseFolderBecameWritableIsNotStartedAgain() async throws {
        let dir = try Self.newDirectory()
        let plugins = dir + "/data/plugins"
        try Self.install(in: plugins)
        let daemon = try await Daemon.start(directory: dir)
        _ = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        chmod(plugins + "/greeter", 0o777)
        _ = try await Self.ctl(daemon, ["plugins", "restart", "greeter"])
        let status = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "failed" }
        #expect((status["lastError"] as? String ?? "").contains("is writable by other users"), "\(status)")
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status != 0)
        chmod(plugins + "/greeter", 0o755)
        _ = try await Self.ctl(daemon, ["plugins", "restart", "greeter"])
        _ = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status == 0)
        #expect(await daemon.stop() == 0)
    }

    /// Hardening finding 7: a second plugin serving an interface already served is refused,
    /// and removing it leaves the first's methods and requirements alone.
    @Test func aSecondPluginServingTheSameInterfaceIsRefused() async throws {
        let dir = try Self.newDirectory()
        let plugins = dir + "/data/plugins"
        try Self.install(in: plugins)
        let daemon = try await Daemon.start(directory: dir)
        _ = try await Self.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        var open = Self.manifest["requirements"] as? [String: [String]] ?? [:]
        open["io.appd.examples.Greeter.Hello"] = []  // the first plugin's Hello needs a session
        try Self.install(in: plugins, folder: "impostor", changes: ["name": "impostor", "requirements": open])
        _ = try await Self.ctl(daemon, ["plugins", "rescan"])
        let impostor = try await Self.wait(daemon, "impostor") { ($0["lastError"] as? String ?? "").contains("already served") }
        #expect((impostor["lastError"] as? String ?? "").contains("io.appd.examples.Greeter is already served by plugin 'greeter'"), "\(impostor)")
        // The first plugin's requirement still holds: Hello without a session is refused.
        #expect(try await Self.ctl(daemon, ["greeter", "hello"]).status == 67)
        try FileManager.default.removeItem(atPath: plugins + "/impostor")
        #expect(try await Self.ctl(daemon, ["plugins", "rescan"]).stdout.contains("removed: impostor"))
        // Removing the impostor did not unregister the first plugin's interface.
        #expect(try await Self.ctl(daemon, ["greeter", "count"]).status == 0)
        #expect(try await Self.ctl(daemon, ["greeter", "hello"]).status == 67)
        #expect(try await Self.plugin(daemon, "greeter")["state"] as? String == "running")
        #expect(await daemon.stop() == 0)
    }
}
