// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// Security review 2, finding 2: a manifest's `sandbox.readOnlyPaths` named appd's own files
/// exactly (or `/`), which the sandbox then showed: with appd not root the plugin shares its uid,
/// read `appd.db` and called admin methods on the control socket. Now such a path is refused
/// before the plugin starts, and a plugin's process is that plugin's on any socket.
@Suite(.serialized, .timeLimit(.minutes(3))) struct SandboxPathTests {
    static let nobody: UInt32 = 65534
    static let asNobody = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// Each path that is, contains or lies under appd's own files is refused with the reason;
    /// the plugin is not started (no restarts), and one with a harmless path runs.
    @Test func aReadOnlyPathNamingAppdsOwnFilesIsRefused() async throws {
        let dir = try SandboxTests.newDirectory()
        let data = dir + "/data"
        let outside = dir + "/runtime"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        chmod(dir, 0o755)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link-to-data", withDestinationPath: data)
        let cases: [(name: String, path: String, says: String)] = [
            ("exact", data, "is \(data)"),
            ("root", "/", "is the whole file system"),
            ("parent", dir, "contains \(data)"),
            ("database", data + "/appd.db", "lies under \(data)"),
            ("socket", dir + "/appd.sock", "is \(dir)/appd.sock"),
            ("linked", dir + "/link-to-data", "is \(data)"),
            ("neighbour", data + "/plugins/harmless", "lies under \(data)"),
        ]
        for item in cases { try SandboxTests.install(item.name, in: dir, sandbox: ["readOnlyPaths": [item.path]]) }
        try SandboxTests.install("harmless", in: dir, sandbox: ["readOnlyPaths": [outside]])
        let daemon = try await Daemon.start(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await SandboxTests.running(daemon, "harmless")
        for item in cases {
            var status: [String: Any] = [:]
            _ = try await eventually(timeout: .seconds(20)) {
                status = try await SandboxTests.status(daemon, item.name)
                return status["state"] as? String == "failed"
            }
            let reason = status["lastError"] as? String ?? ""
            #expect(reason.contains("its read-only path") && reason.contains(item.says) && reason.contains("appd's own"), "\(item.name): \(status)")
            #expect(status["restarts"] as? Int == 0 && status["pid"] == nil, "\(item.name) never ran: \(status)")
        }
        let shown = try await SandboxTests.status(daemon, "harmless")
        #expect((shown["grants"] as? String ?? "").contains("reads \(outside)"), "the read-only path is among the grants: \(shown)")
        #expect(await daemon.stop() == 0)
    }

    /// The finding as it was found: appd not root, its plugin under its uid. A plugin that reaches
    /// the control socket (unconfined here, so the path is open to it) is still only a plugin
    /// there: the admin call is refused, while appctl as the same uid is an admin.
    @Test(.enabled(if: asNobody)) func aPluginOnTheControlSocketIsNotAnAdminByItsUID() async throws {
        let dir = try SandboxTests.newDirectory()
        try SandboxTests.install("hostile", in: dir)
        _ = try await run("/bin/chown", ["-R", "\(Self.nobody):\(Self.nobody)", dir])
        let daemon = try await Daemon.start(["--plugin-sandbox", "none"], directory: dir, uid: Self.nobody)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await SandboxTests.running(daemon, "hostile")
        #expect(try await SandboxTests.probe(daemon, "uid", "-").detail == "\(Self.nobody)", "the plugin shares appd's uid")
        let admin = try await SandboxTests.probe(daemon, "admin", daemon.socket)
        #expect(!admin.ok && admin.detail.contains("PermissionDenied"), "\(admin)")
        let byOperator = try await daemon.ctl(["--json", "call", "io.appd.Auth.ListUsers", "{}"])
        #expect(byOperator.status == 0, "appctl as the same uid is an admin: \(byOperator)")
        #expect(await daemon.stop() == 0)
    }

    /// Security review 2, finding 12: the only way to let a plugin's own uid read its APNs key
    /// was to make the file world-readable. Now its key files sit in
    /// `<pluginCredentialsDirectory>/<plugin>/`, 0600 and appd's, and the plugin reads them at
    /// /run/credentials; another plugin reads neither its copy nor the folder.
    @Test func aPluginReadsItsOwnKeyFilesAndNoOthers() async throws {
        let dir = try SandboxTests.newDirectory()
        chmod(dir, 0o755)
        let credentials = dir + "/credentials"
        for (plugin, file) in [("hostile", "apns.p8"), ("neighbour", "fcm.json")] {
            try FileManager.default.createDirectory(atPath: credentials + "/" + plugin, withIntermediateDirectories: true)
            try "secret of \(plugin)".write(toFile: credentials + "/" + plugin + "/" + file, atomically: false, encoding: .utf8)
            chmod(credentials + "/" + plugin + "/" + file, 0o600)
            try SandboxTests.install(plugin, in: dir)
        }
        chmod(credentials, 0o700)
        let daemon = try await Daemon.start(["--plugin-credentials-directory", credentials], directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["hostile", "neighbour"] { _ = try await SandboxTests.running(daemon, name) }
        let own = try await SandboxTests.probe(daemon, "read", "/run/credentials/apns.p8")
        #expect(own.ok, "its own key file, 0600 on the host: \(own)")
        let other = try await SandboxTests.probe(daemon, "read", "/run/credentials/fcm.json")
        #expect(!other.ok, "another plugin's key is not in its sandbox: \(other)")
        let folder = try await SandboxTests.probe(daemon, "read", credentials + "/neighbour/fcm.json")
        #expect(!folder.ok, "nor the folder on the host: \(folder)")
        #expect(try await SandboxTests.probe(daemon, "read", "/run/credentials/fcm.json", plugin: "neighbour").ok)
        #expect(await daemon.stop() == 0)
    }
}
