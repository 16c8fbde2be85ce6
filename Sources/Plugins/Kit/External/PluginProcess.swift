#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import Synchronization

/// One running external plugin process: spawned with its varlink socket on fd 3 (the systemd
/// LISTEN_FDS convention), its stdout and stderr logged line by line with its name, and its
/// exit reported once. The plugin I/O loop reads the output and, when the process's pidfd
/// says it has exited, reaps it.
final class PluginProcess: Sendable {
    /// The one thread that forks plugins. It lives as long as appd (no idle retirement),
    /// because the parent-death signal that stops a plugin when appd dies follows the thread
    /// that forked it, not the process: a plugin forked from a thread that later exits would
    /// be killed with it.
    static let spawner = BlockingPool(name: "plugin-spawn", threads: 1, queueLimit: 64, idleTimeout: nil)
    /// Every plugin's output pipes and exit descriptor, on one loop.
    static let loop: Result<EventLoop, SocketError> = Result { () throws(SocketError) in
        let loop = try EventLoop(name: "plugin-io")
        loop.start()
        return loop
    }

    let pid: pid_t
    private let exited = Atomic<Bool>(false)

    private init(pid: pid_t) { self.pid = pid }

    var hasExited: Bool { exited.load(ordering: .acquiring) }

    /// Starts `executable`; `onExit` gets the raw wait status once the process is gone.
    static func spawn(
        name: String, executable: String, arguments: [String], environment: [String], folder: String, listenFD: Int32, logger: Logger,
        onExit: @escaping @Sendable (Int32) -> Void
    ) async throws(PluginStartError) -> PluginProcess {
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard appd_pipe(&out) == 0, appd_pipe(&err) == 0 else { throw PluginStartError("cannot create pipes: \(String(cString: strerror(errno)))") }
        let (stdoutWrite, stderrWrite) = (out[1], err[1])
        let spawned = try? await spawner.run { () -> (pid_t, Int32) in
            // C strings that outlive the fork; the LISTEN_PID slot is filled in by the child.
            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            let env = (environment + ["LISTEN_PID=0"]).map { strdup($0) } + [nil]
            defer {
                for p in argv { free(p) }
                for p in env { free(p) }
            }
            let pid = appd_spawn_plugin(executable, argv, env, Int32(environment.count), listenFD, stdoutWrite, stderrWrite, folder)
            return (pid, errno)
        }
        let (pid, spawnErrno) = spawned ?? (-1, EAGAIN)
        close(out[1])
        close(err[1])
        guard pid > 0 else {
            close(out[0])
            close(err[0])
            throw PluginStartError("cannot start \(executable): \(String(cString: strerror(spawnErrno)))")
        }
        let process = PluginProcess(pid: pid)
        let stdout = out[0], stderr = err[0]
        let loop: EventLoop
        let pidfd = appd_pidfd_open(pid)
        switch Self.loop {
        case .success(let shared) where pidfd >= 0: loop = shared
        default:
            if pidfd >= 0 { close(pidfd) }
            close(stdout)
            close(stderr)
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = appd_wait_exit(pid, &status)
            throw PluginStartError("cannot watch it: no event loop or pidfd (\(String(cString: strerror(errno))); Linux 5.3 or later is needed)")
        }
        let output = PluginOutput(name: name, stdout: stdout, stderr: stderr, logger: logger)
        for fd in [stdout, stderr] {
            _ = appd_set_nonblocking(fd)
            loop.add(fd, events: EventLoop.readable) { _, scratch in output.pump(fd, &scratch, loop: loop) }
        }
        loop.add(pidfd, events: EventLoop.readable) { _, scratch in
            var status: Int32 = 0
            guard appd_try_wait(pid, &status) != 0 else { return }
            loop.remove(pidfd)
            close(pidfd)
            // What the plugin wrote last is logged before its exit is reported.
            for fd in [stdout, stderr] { output.pump(fd, &scratch, loop: loop) }
            process.exited.store(true, ordering: .releasing)
            onExit(status)
        }
        return process
    }

    func signal(_ signal: Int32) {
        guard !hasExited else { return }
        kill(pid, signal)
    }

    /// "exited with status 3", "killed by signal 9".
    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        if signal == 0 { return "exited with status \((status >> 8) & 0xff)" }
        return "killed by signal \(signal)"
    }

    static func exitedCleanly(_ status: Int32) -> Bool { status & 0x7f == 0 && (status >> 8) & 0xff == 0 }

}

/// A plugin's stdout and stderr, logged line by line with its name (owned by the plugin I/O
/// loop's thread, which alone calls `drain`).
final class PluginOutput: @unchecked Sendable {  // safe: only the loop thread touches `partial`
    let name: String
    let stdout: Int32
    let logger: Logger
    private var partial: [Int32: [UInt8]] = [:]
    /// The pipes not yet at their end (a closed number may be reused: never read it again).
    private var open: Set<Int32>

    init(name: String, stdout: Int32, stderr: Int32, logger: Logger) {
        self.name = name
        self.stdout = stdout
        self.logger = logger
        self.open = [stdout, stderr]
    }

    /// Logs what `fd` has now; at its end, logs the rest and closes it.
    func pump(_ fd: Int32, _ chunk: inout [UInt8], loop: EventLoop) {
        guard open.contains(fd), !drain(fd, &chunk) else { return }
        open.remove(fd)
        loop.remove(fd)
        close(fd)
    }

    /// Logs every whole line `fd` has now; false once it has closed (the rest is logged).
    private func drain(_ fd: Int32, _ chunk: inout [UInt8]) -> Bool {
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return true }
            if n <= 0 {
                if let rest = partial.removeValue(forKey: fd) { emit(fd, rest[...]) }
                return false
            }
            var buffer = partial[fd, default: []] + chunk[0..<n]
            while let newline = buffer.firstIndex(of: 10) {
                emit(fd, buffer[..<newline])
                buffer.removeSubrange(...newline)
            }
            // A line without an end that grows too long is logged in pieces.
            if buffer.count > 8192 {
                emit(fd, buffer[...])
                buffer = []
            }
            partial[fd] = buffer
        }
    }

    private func emit(_ fd: Int32, _ line: ArraySlice<UInt8>) {
        let text = String(decoding: line.prefix(8192), as: UTF8.self)
        guard !text.isEmpty else { return }
        if fd == stdout {
            logger.info("[\(name)] \(text)", metadata: ["plugin": name, "stream": "stdout"])
        } else {
            logger.notice("[\(name)] \(text)", metadata: ["plugin": name, "stream": "stderr"])
        }
    }
}

/// The plugin could not be started; says why.
struct PluginStartError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
