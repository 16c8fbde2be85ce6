// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Synchronization

/// The processes appd started for external plugins, so that a connection from one of them (or
/// from anything it started: in a sandbox every process descends from bwrap, orphans included,
/// since the sandbox's pid namespace reaps them) is that plugin's on any socket, the control
/// socket included. Plugins may share appd's uid; without this, a plugin that reached the
/// control socket would be an admin by its uid.
public final class PluginPeers: Sendable {
    private let roots = Mutex<[pid_t: PluginScope]>([:])

    public init() {}

    func started(_ pid: pid_t, scope: PluginScope) { roots.withLock { $0[pid] = scope } }

    func exited(_ pid: pid_t) { _ = roots.withLock { $0.removeValue(forKey: pid) } }

    /// The plugin `peer`'s process belongs to, walking its parents (/proc/PID/stat) up to a
    /// process appd started. nil when none is running or the peer descends from none.
    public func scope(of peer: PeerCredentials) -> PluginScope? {
        let table = roots.withLock { $0 }
        guard !table.isEmpty, peer.pid > 1 else { return nil }
        var pid = peer.pid
        for _ in 0..<64 {
            if let scope = table[pid] { return scope }
            guard let parent = Self.parent(of: pid), parent > 1 else { return nil }
            pid = parent
        }
        return nil
    }

    /// The parent pid from /proc/PID/stat ("pid (comm) S ppid ...": after the last ')').
    static func parent(of pid: pid_t) -> pid_t? {
        guard let bytes = PluginDirectoryScanner.readFile("/proc/\(pid)/stat", limit: 4096),
            let close = bytes.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 1 else { return nil }
        return pid_t(String(decoding: fields[1], as: UTF8.self))
    }
}
