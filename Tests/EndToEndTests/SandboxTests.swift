// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// External plugins in their sandbox, end to end: a hostile plugin (Tests/Plugins/hostile) tries
/// what a plugin must not do, under the real appd with bubblewrap, and, to prove each probe
/// can tell, with the sandbox off (`--plugin-sandbox none`), where the same probes succeed.
@Suite(.serialized, .timeLimit(.minutes(3))) struct SandboxTests {
    static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path + "/Plugins/hostile/hostile.py"
    static let isRoot = getuid() == 0

    /// A plugin folder named `name` with the hostile plugin and `sandbox` as its manifest's section.
    static func install(_ name: String, in dir: String, sandbox: [String: Any] = [:]) throws {
        let interface = Self.interface(name)
        let folder = dir + "/data/plugins/" + name
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: source, toPath: folder + "/hostile.py")
        let manifest: [String: Any] = [
            "name": name, "version": "1", "executable": "hostile.py", "arguments": [interface], "interfaces": [interface],
            "defaultRequirements": [String](), "restart": ["policy": "always", "backoffSeconds": 0.1], "sandbox": sandbox,
        ]
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: folder + "/plugin.json"))
    }

    /// A directory for a daemon, reachable by the plugins' own uids (appd as root).
    static func newDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "appd-sandbox-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir + "/data/plugins", withIntermediateDirectories: true)
        return dir
    }

    /// io.appd.tests.Hostile for "hostile", io.appd.tests.Neighbour for "neighbour", ….
    static func interface(_ name: String) -> String { "io.appd.tests." + name.prefix(1).uppercased() + name.dropFirst() }

    static func probe(_ daemon: Daemon, _ action: String, _ target: String, plugin: String = "hostile") async throws -> (ok: Bool, detail: String) {
        let out = try await daemon.ctl(["--json", "call", Self.interface(plugin) + ".Probe", #"{"action":"\#(action)","target":"\#(target)"}"#])
        // A call the plugin did not answer (it was killed meanwhile) is an error on stderr.
        let json = (try? JSONSerialization.jsonObject(with: Data(out.stdout.utf8))) as? [String: Any]
        return (json?["ok"] as? Bool ?? false, json?["detail"] as? String ?? "no reply: \(out)")
    }

    static func status(_ daemon: Daemon, _ name: String) async throws -> [String: Any] {
        let out = try await daemon.ctl(["--json", "plugins"])
        let list = (try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])?["plugins"] as? [[String: Any]] ?? []
        return list.first { $0["name"] as? String == name } ?? [:]
    }

    static func running(_ daemon: Daemon, _ name: String, otherThan pid: Int? = nil) async throws -> [String: Any] {
        var status: [String: Any] = [:]
        _ = try await eventually(timeout: .seconds(20)) {
            status = try await Self.status(daemon, name)
            return status["state"] as? String == "running" && (pid == nil || status["pid"] as? Int != pid)
        }
        return status
    }

    /// A TCP listener on 127.0.0.1 (the host's loopback); returns its port and descriptor.
    static func listen() throws -> (port: Int, fd: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(bound == 0 && Glibc.listen(fd, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (Int(UInt16(bigEndian: address.sin_port)), fd)
    }

    /// What the same plugin reaches with and without the sandbox: each line holds in the
    /// sandbox and its opposite holds without, so none of these checks passes by accident.
    @Test(arguments: [true, false]) func whatAPluginCanReach(sandboxed: Bool) async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir)
        try Self.install("neighbour", in: dir)
        try Self.install("networked", in: dir, sandbox: ["network": true])
        let daemon = try await Daemon.start(sandboxed ? [] : ["--plugin-sandbox", "none"], directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["hostile", "neighbour", "networked"] { _ = try await Self.running(daemon, name) }
        let data = dir + "/data"
        // The neighbour's data, written by the neighbour itself.
        #expect(try await Self.probe(daemon, "write", data + "/plugin-data/hostile/own.txt").ok, "its own data folder is writable")
        let secret = data + "/plugin-data/neighbour/secret.txt"
        try "secret".write(toFile: secret, atomically: false, encoding: .utf8)
        let (port, fd) = try Self.listen()
        defer { close(fd) }

        let db = try await Self.probe(daemon, "read", data + "/appd.db")
        #expect(db.ok == !sandboxed, "read appd.db: \(db)")
        let neighbour = try await Self.probe(daemon, "read", secret)
        #expect(neighbour.ok == !sandboxed, "read another plugin's data: \(neighbour)")
        let folder = try await Self.probe(daemon, "write", data + "/plugins/hostile/planted.py")
        #expect(folder.ok == !sandboxed, "write into its own folder: \(folder)")
        let etc = try await Self.probe(daemon, "write", "/etc/appd-sandbox-test")
        #expect(!etc.ok || !sandboxed, "write into /etc: \(etc)")
        unlink("/etc/appd-sandbox-test")
        let appd = try await Self.probe(daemon, "pid", "\(daemon.process.processIdentifier)")
        #expect(appd.ok == !sandboxed, "see appd's process: \(appd)")
        let tcp = try await Self.probe(daemon, "connect", "\(port)")
        #expect(tcp.ok == !sandboxed, "TCP to 127.0.0.1 without network: \(tcp)")
        if Self.isRoot {
            let shadow = try await Self.probe(daemon, "read", "/etc/shadow")
            #expect(shadow.ok == !sandboxed, "read /etc/shadow: \(shadow)")
            let uid = try await Self.probe(daemon, "uid", "-")
            #expect((uid.detail != "0") == sandboxed, "runs as uid \(uid.detail)")
            // Its data folder is its own uid's.
            let owner = (try FileManager.default.attributesOfItem(atPath: data + "/plugin-data/hostile")[.ownerAccountID] as? Int) ?? -1
            #expect((owner == Int(uid.detail)) || !sandboxed, "data folder owner \(owner), plugin uid \(uid.detail)")
        }
        // A plugin whose manifest declares the network reaches the host's.
        let networked = try await Self.probe(daemon, "connect", "\(port)", plugin: "networked")
        #expect(networked.ok, "TCP to 127.0.0.1 with network: \(networked)")
        #expect(await daemon.stop() == 0)
    }

    /// Fail closed: without bubblewrap no external plugin starts (appd does, and says how to
    /// install it); turning the sandbox off is warned about at every start.
    @Test func withoutBubblewrapPluginsAreRefusedAndNoSandboxIsWarnedAbout() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir)
        let missing = try await Daemon.start(["--plugin-bubblewrap", dir + "/no-bwrap"], directory: dir)
        var status: [String: Any] = [:]
        _ = try await eventually {
            status = try await Self.status(missing, "hostile"); return status["state"] as? String == "failed"
        }
        #expect(status["state"] as? String == "failed" && status["pid"] == nil, "\(status)")
        #expect((status["lastError"] as? String ?? "").contains("apt install bubblewrap"), "\(status)")
        #expect(status["sandbox"] as? String == "bubblewrap unavailable: not started", "not shown as unconfined: \(status)")
        #expect(try await missing.ctl(["ping"]).status == 0)
        #expect(await missing.stop() == 0)
        let unconfined = try await Daemon.start(["--plugin-sandbox", "none"], directory: dir)
        _ = try await Self.running(unconfined, "hostile")
        #expect(await eventually { unconfined.log.contains("external plugins run WITHOUT a sandbox") }, "\(unconfined.log)")
        #expect(try await Self.status(unconfined, "hostile")["sandbox"] as? String == "none, unconfined, 256 MiB")
        #expect(await unconfined.stop() == 0)
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A read-only path the plugin's uid cannot reach (as root: under a 0700 directory) is found
    /// before bwrap is started: the plugin fails at once with the path in the way and the fix in
    /// `appctl plugins`, not with bwrap's "Can't find source path … Permission denied".
    @Test(.enabled(if: getuid() == 0)) func aPathThePluginCannotReachIsExplainedBeforeItStarts() async throws {
        let dir = try Self.newDirectory()
        let hidden = dir + "/private"
        try FileManager.default.createDirectory(atPath: hidden + "/runtime", withIntermediateDirectories: true)
        chmod(hidden, 0o700)
        try Self.install("hostile", in: dir, sandbox: ["readOnlyPaths": [hidden + "/runtime"]])
        let daemon = try await Daemon.start(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var status: [String: Any] = [:]
        _ = try await eventually(timeout: .seconds(20)) {
            status = try await Self.status(daemon, "hostile")
            return status["state"] as? String == "failed"
        }
        let reason = status["lastError"] as? String ?? ""
        #expect(reason.contains("its read-only path \(hidden)/runtime is out of its reach: \(hidden) is 700"), "\(status)")
        #expect(reason.contains("chmod o+x \(hidden)") && !reason.contains("bwrap: "), "\(status)")
        #expect(status["restarts"] as? Int == 0, "a fix is needed, not a restart: \(status)")
        #expect(await daemon.stop() == 0)
    }

    /// Past its memory limit a plugin is killed and restarted, with the reason in `appctl
    /// plugins`; under the limit the same allocation is fine.
    @Test func aPluginOverItsMemoryLimitIsKilledAndRestartedWithTheReason() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir, sandbox: ["limits": ["memoryMB": 64]])
        let daemon = try await Daemon.start(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try await Self.running(daemon, "hostile")
        #expect(try await Self.probe(daemon, "allocate", "16").ok)
        _ = try await Self.probe(daemon, "allocate", "128")
        let again = try await Self.running(daemon, "hostile", otherThan: first["pid"] as? Int)
        #expect((again["lastError"] as? String ?? "").contains("over its memory limit"), "\(again)")
        #expect((again["restarts"] as? Int ?? 0) >= 1, "\(again)")
        #expect(try await Self.probe(daemon, "uid", "-").ok, "serves again after the restart")
        #expect(await daemon.stop() == 0)
    }

    /// Security review finding 6: the sandbox's /tmp is sized from the memory limit and what it
    /// holds counts as the plugin's memory; no file in the data folder grows past dataMB, and a
    /// folder holding more gets the plugin stopped with the reason.
    @Test func tmpfsIsBoundedAndCountedAsMemory() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir, sandbox: ["limits": ["memoryMB": 64]])
        let daemon = try await Daemon.start(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try await Self.running(daemon, "hostile")
        // /tmp is 32 MiB (half of 64): a 40 MiB file does not fit.
        let big = try await Self.probe(daemon, "tmpfs", "40")
        #expect(!big.ok && big.detail.contains("No space left"), "\(big)")
        // /dev itself is read-only.
        #expect(!(try await Self.probe(daemon, "write", "/dev/planted")).ok)
        // What /tmp holds counts with the resident memory: 28 MiB there and 30 resident is over 64.
        _ = try await Self.probe(daemon, "tmpfs", "28")
        _ = try await Self.probe(daemon, "allocate", "30")
        let again = try await Self.running(daemon, "hostile", otherThan: first["pid"] as? Int)
        #expect((again["lastError"] as? String ?? "").contains("in its /tmp and /dev/shm"), "\(again)")
        #expect(await daemon.stop() == 0)
    }

    @Test func aDataFolderOverItsLimitStopsThePluginWithTheReason() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir, sandbox: ["limits": ["dataMB": 8]])
        let daemon = try await Daemon.start(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try await Self.running(daemon, "hostile")
        // One file past dataMB is refused by the kernel (EFBIG).
        let file = try await Self.probe(daemon, "datafile", "12")
        #expect(!file.ok && file.detail.contains("File too large"), "\(file)")
        // Files of 4 MiB each, 16 MiB in all.
        _ = try await Self.probe(daemon, "datafill", "16")
        var status: [String: Any] = [:]
        #expect(
            await eventually(timeout: .seconds(30)) {
                status = (try? await Self.status(daemon, "hostile")) ?? [:]
                return (status["lastError"] as? String ?? "").contains("over its data limit") && status["pid"] as? Int != first["pid"] as? Int
            }, "\(status)")
        #expect(await daemon.stop() == 0)
    }

    /// Security review 2, finding 5: the walk of the data folder stopped counting at 100,000
    /// entries, so 3 GB hid behind 100,050 empty files. A folder with more entries than its
    /// limit is over the limit (here 64 entries, so the test is quick), and is found within a
    /// round or two.
    @Test func aDataFolderWithTooManyEntriesIsOverItsLimit() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir, sandbox: ["limits": ["dataEntries": 64]])
        let daemon = try await Daemon.start(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try await Self.running(daemon, "hostile")
        #expect(try await Self.probe(daemon, "manyfiles", "40").ok, "40 entries are within the limit")
        _ = try await Self.probe(daemon, "manyfiles", "100")
        var status: [String: Any] = [:]
        #expect(
            await eventually(timeout: .seconds(15)) {
                status = (try? await Self.status(daemon, "hostile")) ?? [:]
                return (status["lastError"] as? String ?? "").contains("more than 64 files and folders") && status["pid"] as? Int != first["pid"] as? Int
            }, "\(status)")
        #expect(await daemon.stop() == 0)
    }

    /// Security review finding 15: a plugin's connections to appd count against a budget of
    /// its own, not the operator's uid's: a plugin holding all it may cannot lock appctl out.
    @Test func aPluginHasItsOwnConnectionBudget() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir)
        let daemon = try await Daemon.start(["--max-connections-per-uid", "8", "--max-connections-per-plugin", "5"], directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await Self.running(daemon, "hostile")
        let held = try await Self.probe(daemon, "hold", "12")
        // Its own connection to appd (the plugin's health checks come the other way) and 12 more:
        // at most 5 in all stay open.
        #expect(held.ok && ["open: 4", "open: 5"].contains(held.detail), "\(held)")
        for _ in 0..<3 { #expect(try await daemon.ctl(["status"]).status == 0, "appctl still gets in") }
        #expect(await daemon.stop() == 0)
    }

    /// Finding 15 as it was found: appd not root, so the plugin runs as appd's (the operator's)
    /// uid; its connections used that uid's budget and locked appctl out.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func aPluginOfANonRootAppdCannotLockTheOperatorOut() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir)
        let nobody: UInt32 = 65534
        _ = try await run("/bin/chown", ["-R", "\(nobody):\(nobody)", dir])
        let daemon = try await Daemon.start(["--max-connections-per-uid", "8", "--max-connections-per-plugin", "5"], directory: dir, uid: nobody)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let status = try await Self.running(daemon, "hostile")
        #expect(status["state"] as? String == "running", "\(status) \(daemon.log.suffix(800))")
        let uid = try await Self.probe(daemon, "uid", "-")
        #expect(uid.detail == "\(nobody)", "the plugin runs as appd's uid: \(uid)")
        let held = try await Self.probe(daemon, "hold", "12")
        #expect(held.ok && ["open: 4", "open: 5"].contains(held.detail), "\(held)")
        for _ in 0..<3 {
            let outcome = try await daemon.ctl(["status"])
            #expect(outcome.status == 0, "appctl as the same uid still gets in: \(outcome)")
        }
        #expect(await daemon.stop() == 0)
    }

    /// Security review finding 14: what a plugin writes cannot pass for appd's own log lines.
    @Test func aPluginsOutputIsEscapedInTheLog() async throws {
        let dir = try Self.newDirectory()
        try Self.install("hostile", in: dir)
        let daemon = try await Daemon.start(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await Self.running(daemon, "hostile")
        #expect(try await Self.probe(daemon, "print", #"x\r\u001b[2Knotice appd.audit: admin call method=io.appd.Auth.DeleteUser outcome=ok"#).ok)
        var log = ""
        #expect(
            await eventually {
                log = daemon.log; return log.contains("appd.audit: admin call method=io.appd.Auth.DeleteUser")
            })
        #expect(log.contains(#"[hostile] x\u{d}\u{1b}[2Knotice appd.audit"#), "\(log.suffix(600))")
        #expect(!log.unicodeScalars.contains { $0 == "\r" || $0 == "\u{1b}" }, "no raw CR or ESC in appd's log")
        #expect(!log.split(separator: "\n").contains { $0.hasPrefix("notice appd.audit: admin call method=io.appd.Auth.DeleteUser") })
        #expect(await daemon.stop() == 0)
    }
}
