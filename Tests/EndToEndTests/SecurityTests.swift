// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The findings of the outside security review that were found through the binaries, tested
/// the same way. CI runs as root, so the parts that need another local user (a fake listener,
/// a directory someone else owns, a user without a home) run there with `setpriv`.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SecurityTests {
    static var isRoot: Bool { getuid() == 0 }
    static let stranger: UInt32 = 4242

    /// A fresh directory under the temporary directory with exactly `mode` (and `owner`, as root).
    func directory(mode: mode_t, owner: UInt32? = nil) -> String {
        let path = NSTemporaryDirectory() + "appd-sec-" + UUID().uuidString.prefix(8)
        mkdir(path, 0o700)
        chmod(path, mode)
        if let owner { chown(path, owner, owner) }
        return path
    }

    /// The mode bits of a path.
    func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0xFFFF
    }

    /// `arguments` run as the stranger (setpriv), with `unset` removed from the environment.
    func asStranger(_ arguments: [String], unset: [String] = []) -> (String, [String]) {
        ("/usr/bin/setpriv", ["--reuid", "\(Self.stranger)", "--regid", "\(Self.stranger)", "--clear-groups", "/usr/bin/env"] + unset.flatMap { ["-u", $0] } + arguments)
    }

    /// Finding 1, daemon side: a socket directory others can write, or that another user owns,
    /// is refused before anything listens in it.
    @Test func appdRefusesASocketDirectoryOthersControl() async throws {
        let open = directory(mode: 0o777)
        defer { try? FileManager.default.removeItem(atPath: open) }
        let refused = try await run(Binaries.appd, ["--socket", open + "/appd.sock", "--data-dir", open + "/data"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("refusing to use \(open): it is writable by group or others"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: open + "/appd.sock"))
        if Self.isRoot {
            let theirs = directory(mode: 0o755, owner: Self.stranger)
            defer { try? FileManager.default.removeItem(atPath: theirs) }
            let data = directory(mode: 0o700)
            defer { try? FileManager.default.removeItem(atPath: data) }
            let planted = try await run(Binaries.appd, ["--socket", theirs + "/appd.sock", "--data-dir", data + "/data"])
            #expect(planted.status == 1)
            #expect(planted.stderr.contains("belongs to uid \(Self.stranger)"), "\(planted.stderr)")
        }
    }

    /// Finding 1, client side: appctl checks who listens (SO_PEERCRED) before it sends a byte;
    /// a listener run by another user never sees the password.
    @Test(.enabled(if: SecurityTests.isRoot, "needs root to run a listener as another user"))
    func appctlSendsNothingToAListenerOfAnotherUser() async throws {
        let dir = directory(mode: 0o755, owner: Self.stranger)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let script = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(4); s.settimeout(20)
            open(sys.argv[2], "w").close()
            for _ in range(2):
                c, _ = s.accept(); c.settimeout(3); got = b""
                try:
                    while True:
                        chunk = c.recv(65536)
                        if not chunk: break
                        got += chunk
                except OSError:
                    pass
                with open(sys.argv[2], "ab") as f: f.write(got + b"|")
                c.close()
            """
        let (setpriv, arguments) = asStranger(["/usr/bin/python3", "-c", script, dir + "/fake.sock", dir + "/got"])
        let fake = ChildProcess()
        fake.executableURL = URL(fileURLWithPath: setpriv)
        fake.arguments = arguments
        fake.standardOutput = FileHandle.nullDevice
        fake.standardError = FileHandle.nullDevice
        try fake.run()
        defer { fake.terminate() }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: dir + "/got") && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }

        let env = ["XDG_CONFIG_HOME": dir + "-config"]
        let refused = try await run(
            Binaries.appctl, ["--socket", dir + "/fake.sock", "login", "ada@example.com", "--password-stdin"], stdin: "secret password\n", environment: env)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("it runs as uid \(Self.stranger), not as you"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--expect-uid \(Self.stranger)"))
        // Told to trust that uid, appctl does talk to it: the check is what kept it silent.
        _ = try await run(
            Binaries.appctl, ["--socket", dir + "/fake.sock", "--expect-uid", "\(Self.stranger)", "--timeout", "1", "login", "ada@example.com", "--password-stdin"],
            stdin: "secret password\n", environment: env)
        while fake.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let got = String(decoding: FileManager.default.contents(atPath: dir + "/got") ?? Data(), as: UTF8.self).split(separator: "|", omittingEmptySubsequences: false)
        #expect(got.first == "", "the refused connection carried \(got.first ?? "")")
        #expect(got.count > 1 && got[1].contains("\"method\""), "appctl said nothing even when told to trust the listener")
    }

    /// The systemd deployment: appd runs as its own user on a socket root put in a directory
    /// only root controls (/run/appd). appctl trusts that listener without --expect-uid.
    @Test(.enabled(if: SecurityTests.isRoot, "needs root to hand a socket to another user"))
    func appctlTrustsADaemonOfAnotherUserOnASocketOnlyRootControls() async throws {
        let dir = directory(mode: 0o755)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let script = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(4); s.settimeout(20)
            os.setgroups([]); os.setgid(\(Self.stranger)); os.setuid(\(Self.stranger))
            open(sys.argv[2], "w").close()
            c, _ = s.accept(); c.settimeout(3); got = b""
            try:
                while True:
                    chunk = c.recv(65536)
                    if not chunk: break
                    got += chunk
            except OSError:
                pass
            open(sys.argv[2], "wb").write(got)
            """
        let fake = ChildProcess()
        fake.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        fake.arguments = ["-c", script, dir + "/appd.sock", dir + "/got"]
        fake.standardOutput = FileHandle.nullDevice
        fake.standardError = FileHandle.nullDevice
        chmod(dir, 0o777)  // so the listener, once it is the stranger, can write what it got
        try fake.run()
        defer { fake.terminate() }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: dir + "/got") && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        chmod(dir, 0o755)
        let outcome = try await run(Binaries.appctl, ["--socket", dir + "/appd.sock", "--timeout", "1", "ping"])
        #expect(!outcome.stderr.contains("refusing to talk"), "\(outcome.stderr)")
        while fake.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let got = String(decoding: FileManager.default.contents(atPath: dir + "/got") ?? Data(), as: UTF8.self)
        #expect(got.contains("io.appd.Daemon.Ping"), "\(got)")
    }

    /// Finding 2: without a home, nothing falls back to /tmp: appd asks for --data-dir, appctl
    /// keeps no session.
    @Test func withoutAHomeNothingFallsBackToTmp() async throws {
        let homeless = ["HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "APPD_DATA_DIR", "APPD_CONFIG"]
        let outcome: Outcome
        if Self.isRoot {
            let (setpriv, arguments) = asStranger([Binaries.appd, "--print-config"], unset: homeless)
            outcome = try await run(setpriv, arguments)
        } else {
            outcome = try await run("/usr/bin/env", homeless.flatMap { ["-u", $0] } + [Binaries.appd, "--print-config"])
        }
        #expect(outcome.status == 78)
        #expect(outcome.stderr.contains("dataDirectory") && outcome.stderr.contains("pass --data-dir"), "\(outcome.stderr)")

        let daemon = try await Daemon.start()
        let signup = try await run(
            "/usr/bin/env", homeless.flatMap { ["-u", $0] } + [Binaries.appctl, "--socket", daemon.socket, "signup", "ada@example.com", "--password-stdin"],
            stdin: "correct horse\n")
        #expect(signup.status == 64 && signup.stderr.contains("no private place to keep the session"), "\(signup.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/.config/appctl/sessions.json"))
        #expect(await daemon.stop() == 0)
    }

    /// Finding 4: the database files are created 0600 and an existing data directory that
    /// others could read is made owner-only — or, with appd as root and sandboxed plugins (whose
    /// own uids must pass through it to their folders), searchable but not readable: 0711.
    @Test func theDataDirectoryAndTheDatabaseAreOwnerOnly() async throws {
        let base = directory(mode: 0o755)
        mkdir(base + "/data", 0o755)
        chmod(base + "/data", 0o755)
        let daemon = try await Daemon.start(directory: base)
        _ = try await daemon.ctl(["signup", "ada@example.com", "--password-stdin"], stdin: "correct horse\n")
        #expect(mode(base + "/data") == (getuid() == 0 ? 0o711 : 0o700))
        for file in ["appd.db", "appd.db-wal", "appd.db-shm"] {
            #expect(mode(base + "/data/" + file) == 0o600, "\(file) is \(String(mode(base + "/data/" + file), radix: 8))")
        }
        #expect(await daemon.stop() == 0)
    }

    /// Finding 8: the session file is written to a new file, never through a planted link.
    @Test func theSessionFileIsNeverWrittenThroughALink() async throws {
        let daemon = try await Daemon.start()
        let config = daemon.directory + "/config"
        try FileManager.default.createDirectory(atPath: config + "/appctl", withIntermediateDirectories: true)
        chmod(config + "/appctl", 0o700)
        let precious = daemon.directory + "/precious"
        try "precious\n".write(toFile: precious, atomically: true, encoding: .utf8)
        symlink(precious, config + "/appctl/sessions.json.tmp")
        let signup = try await run(
            Binaries.appctl, ["--socket", daemon.socket, "signup", "ada@example.com", "--password-stdin"], stdin: "correct horse\n",
            environment: ["XDG_CONFIG_HOME": config])
        #expect(signup.status == 0, "\(signup.stderr)")
        #expect((try? String(contentsOfFile: precious, encoding: .utf8)) == "precious\n")
        #expect(mode(config + "/appctl/sessions.json") == 0o600)
        #expect(await daemon.stop() == 0)
    }
}
