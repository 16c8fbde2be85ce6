// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization

/// A child process for the tests, with the part of Foundation's `Process` they use, started with
/// `posix_spawn` directly. Foundation's `Process.run()` on Linux crashes now and then: it copies
/// each `/proc/self/fd` entry's whole 256-byte `d_name`, reading past glibc's buffer when a short
/// record sits at its end (swift-corelibs-foundation PR #5472, Swift 6.3.1) — about one run in
/// five of a suite that starts many processes. Here the child gets fds 0–2 as set and nothing
/// else (`posix_spawn_file_actions_addclosefrom_np`), default signal handlers and an empty mask.
final class ChildProcess: Sendable {
    enum TerminationReason: Sendable, Equatable {
        case exit
        case uncaughtSignal
    }

    private struct Setup {
        var executableURL: URL?
        var arguments: [String] = []
        var environment: [String: String]?
        var standardInput: (any Sendable)?
        var standardOutput: (any Sendable)?
        var standardError: (any Sendable)?
    }

    private struct State {
        var pid: pid_t = 0
        /// The raw wait status once reaped.
        var status: Int32?
    }

    private let setup = Mutex(Setup())
    private let state = Mutex(State())

    init() {}

    var executableURL: URL? {
        get { setup.withLock { $0.executableURL } }
        set { setup.withLock { $0.executableURL = newValue } }
    }
    var arguments: [String] {
        get { setup.withLock { $0.arguments } }
        set { setup.withLock { $0.arguments = newValue } }
    }
    /// Nil: the test process's own environment.
    var environment: [String: String]? {
        get { setup.withLock { $0.environment } }
        set { setup.withLock { $0.environment = newValue } }
    }
    /// A `FileHandle` or a `Pipe` (its reading end for input, its writing end for output); nil
    /// keeps the test process's own.
    var standardInput: (any Sendable)? {
        get { setup.withLock { $0.standardInput } }
        set { setup.withLock { $0.standardInput = newValue } }
    }
    var standardOutput: (any Sendable)? {
        get { setup.withLock { $0.standardOutput } }
        set { setup.withLock { $0.standardOutput = newValue } }
    }
    var standardError: (any Sendable)? {
        get { setup.withLock { $0.standardError } }
        set { setup.withLock { $0.standardError = newValue } }
    }

    var processIdentifier: Int32 { state.withLock { $0.pid } }

    /// Starts the program; throws what `posix_spawn` said.
    func run() throws {
        let setup = self.setup.withLock { $0 }
        guard let path = setup.executableURL?.path else { throw SpawnFailed(program: "(none)", code: EINVAL) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream, reading) in [(Int32(0), setup.standardInput, true), (1, setup.standardOutput, false), (2, setup.standardError, false)] {
            guard let source = Self.descriptor(of: stream, reading: reading) else { continue }
            // FileHandle.nullDevice has no descriptor of its own (-1): the child opens /dev/null.
            // (Dup'ing -1 fails quietly, and the child kept the test process's pipe: a test
            // process that crashed left swift test waiting for appd to close its output.)
            let code =
                source < 0
                ? posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
                : posix_spawn_file_actions_adddup2(&actions, source, fd)
            guard code == 0 else { throw SpawnFailed(program: path, code: code) }
        }
        _ = Self.closeFrom?(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let environment = setup.environment ?? ProcessInfo.processInfo.environment
        let argv = ([path] + setup.arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard code == 0 else { throw SpawnFailed(program: path, code: code) }
        state.withLock { $0.pid = pid }
        // As Process does: a pipe's end the child has is closed here, so the other end sees
        // the end of input when the child is done with it.
        if let pipe = setup.standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
        for case let pipe as Pipe in [setup.standardOutput, setup.standardError] { try? pipe.fileHandleForWriting.close() }
    }

    /// The descriptor a stream stands for in the child; nil for none given.
    private static func descriptor(of stream: (any Sendable)?, reading: Bool) -> Int32? {
        switch stream {
        case let handle as FileHandle: handle.fileDescriptor
        case let pipe as Pipe: reading ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
        default: nil
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module
    /// does not show (it is behind _GNU_SOURCE).
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Reaps the child if it has exited (never blocks).
    private func reap() -> Int32? {
        state.withLock { s in
            if let status = s.status { return status }
            guard s.pid > 0 else { return nil }
            var status: Int32 = 0
            guard waitpid(s.pid, &status, WNOHANG) == s.pid else { return nil }
            s.status = status
            return status
        }
    }

    var isRunning: Bool { processIdentifier > 0 && reap() == nil }

    /// Sends SIGTERM (nothing once it has exited).
    func terminate() {
        if isRunning { kill(processIdentifier, SIGTERM) }
    }

    /// Waits, sleeping, until the child exits.
    func waitUntilExit() {
        while isRunning { usleep(2_000) }
    }

    private var rawStatus: Int32 { reap() ?? 0 }

    var terminationReason: TerminationReason { rawStatus & 0x7F == 0 ? .exit : .uncaughtSignal }

    /// The exit status, or the signal that ended it.
    var terminationStatus: Int32 {
        let raw = rawStatus
        return raw & 0x7F == 0 ? (raw >> 8) & 0xFF : raw & 0x7F
    }
}

struct SpawnFailed: Error, CustomStringConvertible {
    let program: String
    let code: Int32
    var description: String { "cannot start \(program): \(String(cString: strerror(code)))" }
}
