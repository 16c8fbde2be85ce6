#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import Synchronization

/// One running external plugin process: spawned with its varlink socket on fd 3 (the systemd
/// LISTEN_FDS convention), its stdout and stderr logged line by line with its name, and its
/// exit reported once. A thread of the output pool pumps the output and then reaps the process.
final class PluginProcess: Sendable {
    /// The one thread that forks plugins. It lives as long as appd (no idle retirement),
    /// because the parent-death signal that stops a plugin when appd dies follows the thread
    /// that forked it, not the process: a plugin forked from a thread that later exits would
    /// be killed with it.
    static let spawner = BlockingPool(name: "plugin-spawn", threads: 1, queueLimit: 64, idleTimeout: nil)
    /// One thread per running plugin pumps its output and then reaps it.
    static let output = BlockingPool(name: "plugin-output", threads: 256, queueLimit: 0)

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
        let reap: @Sendable () -> Void = {
            var status: Int32 = 0
            _ = appd_wait_exit(pid, &status)
            process.exited.store(true, ordering: .releasing)
            onExit(status)
        }
        do throws(PoolRefusal) {
            try output.submit {
                pump([stdout, stderr], name: name, logger: logger)
                reap()
            }
        } catch {
            // More plugins than output threads: this one runs without its output logged.
            logger.warning("plugin output not logged", metadata: ["plugin": "\(name)", "reason": "\(error)"])
            close(stdout)
            close(stderr)
            kill(pid, SIGKILL)
            reap()
            throw PluginStartError("cannot watch its output: \(error)")
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

    /// Logs each line of the plugin's output until both streams close.
    private static func pump(_ fds: [Int32], name: String, logger: Logger) {
        var open = fds
        var partial: [Int32: [UInt8]] = [:]
        var chunk = [UInt8](repeating: 0, count: 8192)
        func emit(_ fd: Int32, _ line: ArraySlice<UInt8>) {
            let text = String(decoding: line.prefix(8192), as: UTF8.self)
            guard !text.isEmpty else { return }
            if fd == fds[0] {
                logger.info("[\(name)] \(text)", metadata: ["plugin": name, "stream": "stdout"])
            } else {
                logger.notice("[\(name)] \(text)", metadata: ["plugin": name, "stream": "stderr"])
            }
        }
        while !open.isEmpty {
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polls, nfds_t(polls.count), -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
            for p in polls where p.revents != 0 {
                let n = chunk.withUnsafeMutableBytes { read(p.fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    if let rest = partial.removeValue(forKey: p.fd) { emit(p.fd, rest[...]) }
                    close(p.fd)
                    open.removeAll { $0 == p.fd }
                    continue
                }
                var buffer = partial[p.fd, default: []] + chunk[0..<n]
                while let newline = buffer.firstIndex(of: 10) {
                    emit(p.fd, buffer[..<newline])
                    buffer.removeSubrange(...newline)
                }
                // A line without an end that grows too long is logged in pieces.
                if buffer.count > 8192 {
                    emit(p.fd, buffer[...])
                    buffer = []
                }
                partial[p.fd] = buffer
            }
        }
    }
}

/// The plugin could not be started; says why.
struct PluginStartError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
