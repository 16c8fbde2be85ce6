// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// The systemd service protocol: readiness and status notifications (`sd_notify`), the
/// watchdog, and socket activation (`LISTEN_FDS`). Everything is a no-op outside systemd.
public enum Systemd {
    /// Sends `state` (e.g. "READY=1\nSTATUS=serving") to `$NOTIFY_SOCKET`, if set.
    @discardableResult
    public static func notify(_ state: String) -> Bool {
        guard let path = SocketPath.environment("NOTIFY_SOCKET"), !path.isEmpty else { return false }
        return appd_notify(path, state) == 0
    }

    /// Half the watchdog interval systemd expects pings at, if the watchdog is on for us.
    public static var watchdogInterval: Duration? {
        guard let text = SocketPath.environment("WATCHDOG_USEC"), let usec = Int64(text), usec > 0 else { return nil }
        if let pid = SocketPath.environment("WATCHDOG_PID"), Int32(pid) != getpid() { return nil }
        return .microseconds(usec / 2)
    }

    /// The first socket systemd passed us (fd 3), when `LISTEN_PID` is ours. Clears the
    /// variables so processes we start do not think the socket is theirs.
    public static func takeListeningSocket() -> Int32? {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pid = SocketPath.environment("LISTEN_PID"), Int32(pid) == getpid(),
            let count = SocketPath.environment("LISTEN_FDS").flatMap({ Int($0) }), count >= 1
        else { return nil }
        let fd: Int32 = 3
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// Whether stderr goes to the journal (so log lines carry priority prefixes).
    public static var loggingToJournal: Bool { SocketPath.environment("JOURNAL_STREAM") != nil }
}

/// Pings the systemd watchdog at half its interval while the daemon runs.
public struct WatchdogService: Service {
    public let interval: Duration
    public var name: String { "watchdog" }

    public init(interval: Duration) { self.interval = interval }

    public func run() async throws {
        let interval = self.interval
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                Systemd.notify("WATCHDOG=1")
                try? await Task.sleep(for: interval)
            }
        }
    }
}
