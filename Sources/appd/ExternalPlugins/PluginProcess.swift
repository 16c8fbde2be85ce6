// SPDX-License-Identifier: Apache-2.0
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

    /// The process appd forked: the plugin itself, or, in a sandbox, bwrap (whose grandchild
    /// the plugin is; killing bwrap takes the whole sandbox down).
    let pid: pid_t
    let sandboxed: Bool
    private let exited = Atomic<Bool>(false)
    private let plugin = Atomic<Int32>(0)
    /// Its stdout and stderr, logged.
    let output: PluginOutput

    /// Why bwrap could not set its sandbox up, from what bwrap wrote, if it did.
    var sandboxError: String? { output.sandboxError.withLock { $0 } }
    /// The last line the plugin wrote to stderr (control characters escaped, at most 300 characters).
    var lastErrorLine: String? { output.lastErrorLine.withLock { $0 } }

    private init(pid: pid_t, sandboxed: Bool, output: PluginOutput) {
        self.pid = pid
        self.sandboxed = sandboxed
        self.output = output
    }

    var hasExited: Bool { exited.load(ordering: .acquiring) }

    /// What to start and how.
    struct Plan {
        var path: String
        /// argv, starting with the program's name.
        var arguments: [String]
        var environment: [String]
        /// Set LISTEN_PID in the child (not in a sandbox, where the shell inside sets it).
        var setsListenPID: Bool
        var directory: String?
        /// Kept at 4, 5, … in the child.
        var descriptors: [Int32] = []
        var limits: [(resource: Int32, value: UInt64)] = []
        /// The uid and gid to run as (appd as root); nil: appd's own.
        var uid: UInt32?
        var sandboxed: Bool
    }

    /// Starts `plan`; `onExit` gets the raw wait status once the process is gone.
    static func spawn(
        name: String, plan: Plan, listenFD: Int32, logger: Logger, onExit: @escaping @Sendable (Int32) -> Void
    ) async throws(PluginStartError) -> PluginProcess {
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard appd_pipe(&out) == 0, appd_pipe(&err) == 0 else { throw PluginStartError("cannot create pipes: \(String(cString: strerror(errno)))") }
        let (stdoutWrite, stderrWrite) = (out[1], err[1])
        let spawned = try? await spawner.run { () -> (pid_t, Int32) in
            // C strings that outlive the fork; the LISTEN_PID slot is filled in by the child.
            let argv = plan.arguments.map { strdup($0) } + [nil]
            let env = (plan.environment + (plan.setsListenPID ? ["LISTEN_PID=0"] : [])).map { strdup($0) } + [nil]
            defer {
                for p in argv { free(p) }
                for p in env { free(p) }
            }
            let kinds = plan.limits.map(\.resource), values = plan.limits.map { CUnsignedLongLong($0.value) }
            let uid = plan.uid.map { Int($0) } ?? -1
            let pid = appd_spawn_plugin(
                plan.path, argv, env, plan.setsListenPID ? Int32(plan.environment.count) : -1, listenFD, stdoutWrite, stderrWrite, plan.directory,
                plan.descriptors, Int32(plan.descriptors.count), kinds, values, Int32(kinds.count), uid, uid)
            return (pid, errno)
        }
        let (pid, spawnErrno) = spawned ?? (-1, EAGAIN)
        close(out[1])
        close(err[1])
        guard pid > 0 else {
            close(out[0])
            close(err[0])
            throw PluginStartError("cannot start \(plan.path): \(String(cString: strerror(spawnErrno)))")
        }
        let stdout = out[0], stderr = err[0]
        let output = PluginOutput(name: name, stdout: stdout, stderr: stderr, logger: logger)
        let process = PluginProcess(pid: pid, sandboxed: plan.sandboxed, output: output)
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

    /// Sends `signal` to the plugin: SIGKILL to the process appd forked (in a sandbox, bwrap,
    /// which takes every process in it down), other signals to the plugin itself.
    func signal(_ signal: Int32) {
        guard !hasExited else { return }
        kill(signal == SIGKILL ? pid : pluginPID ?? pid, signal)
    }

    /// The plugin's own process (in a sandbox: bwrap's grandchild, once it exists).
    var pluginPID: pid_t? {
        guard sandboxed else { return pid }
        let known = plugin.load(ordering: .relaxed)
        if known > 0 { return known }
        guard let inner = Self.children(of: pid).first, let found = Self.children(of: inner).first else { return nil }
        plugin.store(found, ordering: .relaxed)
        return found
    }

    /// Whether the plugin's own process (once known) still runs: not gone, not a zombie.
    var pluginIsRunning: Bool {
        let known = plugin.load(ordering: .relaxed)
        guard sandboxed, known > 0, let bytes = PluginDirectoryScanner.readFile("/proc/\(known)/stat", limit: 4096) else { return false }
        // "pid (comm) S ...": the state follows the last ')'.
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")), close + 2 < bytes.count else { return false }
        return bytes[close + 2] != UInt8(ascii: "Z") && bytes[close + 2] != UInt8(ascii: "X")
    }

    /// Resident memory of the process appd forked and all its descendants, in bytes.
    func residentBytes() -> UInt64 {
        var total: UInt64 = 0
        var pending = [pid]
        var seen = 0
        while let next = pending.popLast(), seen < 4096 {
            seen += 1
            total += Self.resident(next)
            pending += Self.children(of: next)
        }
        return total
    }

    /// What the sandbox's writable tmpfs mounts (/tmp, /dev/shm) hold, read through the root
    /// of the first process of the tree that is inside the sandbox's mount namespace.
    func sandboxTmpfsBytes() -> UInt64 {
        let ours = Self.mountNamespace("self")
        var pending = [pid]
        var seen = 0
        while let next = pending.popLast(), seen < 64 {
            seen += 1
            if let theirs = Self.mountNamespace("\(next)"), theirs != ours {
                var tmp = statvfs(), shm = statvfs()
                guard statvfs("/proc/\(next)/root/tmp", &tmp) == 0, statvfs("/proc/\(next)/root/dev/shm", &shm) == 0 else { return 0 }
                func used(_ s: statvfs) -> UInt64 { UInt64(s.f_blocks - s.f_bfree) * UInt64(s.f_frsize) }
                return used(tmp) + used(shm)
            }
            pending += Self.children(of: next)
        }
        return 0
    }

    private static func mountNamespace(_ pid: String) -> String? {
        var target = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/\(pid)/ns/mnt", &target, target.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Children of every thread of `pid` (/proc/PID/task/TID/children).
    static func children(of pid: pid_t) -> [pid_t] {
        guard let tasks = opendir("/proc/\(pid)/task") else { return [] }
        defer { closedir(tasks) }
        var out: [pid_t] = []
        while let entry = readdir(tasks) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let _ = Int32(tid), let bytes = PluginDirectoryScanner.readFile("/proc/\(pid)/task/\(tid)/children", limit: 1 << 16) else { continue }
            out += String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }
        }
        return out
    }

    private static func resident(_ pid: pid_t) -> UInt64 {
        // statm: size resident shared ... (pages)
        guard let bytes = PluginDirectoryScanner.readFile("/proc/\(pid)/statm", limit: 4096) else { return 0 }
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = UInt64(fields[1]) else { return 0 }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// "exited with status 3", "killed by signal 9". In a sandbox bwrap passes the plugin's
    /// exit on, a death by signal N as status 128+N.
    func describe(_ status: Int32) -> String { Self.describe(status, sandboxed: sandboxed) }

    static func describe(_ status: Int32, sandboxed: Bool = false) -> String {
        let signal = status & 0x7f
        let code = (status >> 8) & 0xff
        if signal == 0 && sandboxed && code > 128 && code < 128 + 65 { return "killed by signal \(code - 128)" }
        if signal == 0 && code == 127 {
            return
                "exited with status 127 (its program, interpreter or a shared library it needs could not be loaded: see its last log lines; a Swift plugin needs "
                + "--static-swift-stdlib, docs/plugins.md)"
        }
        if signal == 0 && code == 126 { return "exited with status 126 (its program could not be executed: is it executable, for this machine?)" }
        if signal == 0 { return "exited with status \(code)" }
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
    /// The last line bwrap itself wrote ("bwrap: Can't find source path …"): why a sandbox
    /// could not be set up, for `appctl plugins`. (The plugin's own output only goes to the log.)
    let sandboxError = Mutex<String?>(nil)
    /// The last line on stderr: why a plugin that exits while starting did (a Python
    /// traceback's last line, `ModuleNotFoundError: …`), for `appctl plugins` (admins only).
    let lastErrorLine = Mutex<String?>(nil)

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
            if text.hasPrefix("bwrap: ") { sandboxError.withLock { $0 = String(text.prefix(300)) } }
            lastErrorLine.withLock { $0 = String(text.escapingControlCharacters().prefix(300)) }
        }
    }
}

/// The plugin could not be started; says why.
struct PluginStartError: Error, CustomStringConvertible {
    let description: String
    /// Starting again will not help until the operator changes something.
    var permanent = false
    init(_ description: String, permanent: Bool = false) {
        self.description = description
        self.permanent = permanent
    }
}
