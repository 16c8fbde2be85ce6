// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The real appd and appctl binaries that `swift build --build-tests` put beside the tests.
enum Binaries {
    static let directory: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (exe as NSString).deletingLastPathComponent
    }()
    static var appd: String { directory + "/appd" }
    static var appctl: String { directory + "/appctl" }

    /// The folder of the Swift runtime libraries the test binaries (and the Swift example
    /// plugin) load: a sandboxed plugin built with Swift must be given it read-only.
    static let swiftRuntime: String = {
        let maps = FileHandle(forReadingAtPath: "/proc/self/maps").map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
        let library = maps.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }.first { $0.hasSuffix("/libswiftCore.so") }
        return library.map { ($0 as NSString).deletingLastPathComponent } ?? "/usr/lib/swift/linux"
    }()
}

/// What a finished process left behind.
struct Outcome {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs a binary to completion with a time limit; output goes through temporary files so a
/// chatty process can never block on a full pipe.
func run(_ path: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:], timeout: Double = 30) async throws -> Outcome {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env["APPD_SOCKET"] = nil
    for (k, v) in environment { env[k] = v }
    process.environment = env
    let base = NSTemporaryDirectory() + "appd-out-" + UUID().uuidString
    try createEmptyFile(base + ".out")
    try createEmptyFile(base + ".err")
    defer {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    if await !exits(process, within: .seconds(timeout)) {
        process.terminate()
        // One that does not stop when asked is killed: a test never waits on it for ever.
        if await !exits(process, within: .seconds(10)) { kill(process.processIdentifier, SIGKILL) }
    }
    process.waitUntilExit()
    try out.close()
    try err.close()
    return Outcome(
        status: process.terminationStatus,
        stdout: (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
}

/// Whether `process` exits within `limit`; sleeps meanwhile, never blocks (other suites share
/// the few cooperative threads).
func exits(_ process: ChildProcess, within limit: Duration) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: limit)
    while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
    return !process.isRunning
}

/// Waits for a process a test started to exit, at most `limit`: one still running then fails
/// the test, naming `what` it was (and what `explain` adds), and is killed — a test never waits
/// on it for ever.
func waitForExit(_ process: ChildProcess, _ what: String, within limit: Duration = .seconds(30), explain: () async -> String = { "" }) async {
    if await !exits(process, within: limit) {
        Issue.record("\(what) (pid \(process.processIdentifier)) did not exit within \(limit)\(await explain())")
        kill(process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
}

/// A real appd in the background on a socket in a temporary directory.
final class Daemon {
    let directory: String
    let socket: String
    let process = ChildProcess()
    /// Set when another Daemon took over this directory (a restart), so it is not removed.
    var keepDirectory = false
    /// appd's stderr (its log), kept in a file so it can be read at any time.
    var logPath: String { directory + "/appd.log" }
    /// The uid appd (and `ctl`) run as, through setpriv, when not the test's own.
    let uid: UInt32?

    private init(extra: [String], environment: [String: String], directory existing: String? = nil, uid: UInt32? = nil) throws {
        self.uid = uid
        directory = existing ?? NSTemporaryDirectory() + "appd-e2e-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socket = directory + "/appd.sock"
        let arguments = ["--socket", socket, "--data-dir", directory + "/data", "--log-level", "notice"] + extra
        if let uid {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = Self.setpriv(uid) + [Binaries.appd] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Binaries.appd)
            process.arguments = arguments
        }
        try createEmptyFile(directory + "/appd.log")
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/appd.log"))
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        try process.run()
    }

    /// Starts appd and waits until it answers a ping.
    /// A new appd on the same socket and data directory as a stopped one (a restart).
    static func start(reusing stopped: Daemon) async throws -> Daemon {
        stopped.keepDirectory = true
        return try await start(directory: stopped.directory)
    }

    static func start(_ extra: [String] = [], environment: [String: String] = [:], directory: String? = nil, uid: UInt32? = nil) async throws -> Daemon {
        let daemon = try Daemon(extra: extra, environment: environment, directory: directory, uid: uid)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if FileManager.default.fileExists(atPath: daemon.socket), (try? await daemon.ctl(["ping"]).status) == 0 { return daemon }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DaemonDidNotStart()
    }

    struct DaemonDidNotStart: Error {}

    /// Runs appctl against this daemon.
    func ctl(_ arguments: [String], stdin: String? = nil) async throws -> Outcome {
        guard let uid else { return try await run(Binaries.appctl, ["--socket", socket] + arguments, stdin: stdin) }
        return try await run(
            "/usr/bin/setpriv", Self.setpriv(uid) + [Binaries.appctl, "--socket", socket] + arguments, stdin: stdin,
            environment: ["HOME": directory, "XDG_CONFIG_HOME": directory + "/config"])
    }

    /// setpriv's arguments to run as `uid` (and the group of the same number), no other groups.
    static func setpriv(_ uid: UInt32) -> [String] { ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--"] }

    /// Sends a signal and waits for the exit status.
    func stop(signal: Int32 = SIGTERM) async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return await exitStatus()
    }

    /// Waits (sleeping) for the process to exit, at most `limit`: an appd that does not stop
    /// fails the test with its threads' stacks and its log's end, and is killed — a shutdown that
    /// hangs is a failure that says where, never a test run that waits for ever.
    func exitStatus(within limit: Duration = .seconds(60)) async -> Int32 {
        await waitForExit(process, "appd", within: limit) {
            "; its threads:\n\(await Self.stacks(of: process.processIdentifier))\nthe end of its log:\n\(log.suffix(4000))"
        }
        return process.terminationStatus
    }

    /// Every thread's stack of a running process, read by gdb (what it says when it cannot).
    static func stacks(of pid: Int32) async -> String {
        guard let outcome = try? await run("/usr/bin/gdb", ["-p", String(pid), "-batch", "-nx", "-ex", "thread apply all bt 20"], timeout: 60) else {
            return "(gdb could not be run)"
        }
        let frames = outcome.stdout.split(separator: "\n").filter { $0.hasPrefix("Thread ") || $0.hasPrefix("#") }
        return frames.isEmpty ? "(gdb read no stack: \(outcome.stderr.suffix(500)))" : frames.joined(separator: "\n")
    }

    var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if !keepDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }
}

/// Creates (or empties) a file, or says which one could not be created.
func createEmptyFile(_ path: String) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil) else { throw CannotCreateFile(path: path) }
}

struct CannotCreateFile: Error, CustomStringConvertible {
    let path: String
    var description: String { "cannot create \(path)" }
}
