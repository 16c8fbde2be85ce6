// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The one way appd catches signals. `watch` installs a sigaction handler at once (a signal
/// that arrives right after is recorded, never lost in a window where it was ignored but not
/// yet watched); the handler only writes to an eventfd, which the signal loop watches and
/// turns into calls of the handlers registered for that signal.
public enum Signals {
    private struct Registry {
        var handlers: [Int32: [Int: @Sendable () -> Void]] = [:]
        /// Signals whose eventfd the loop watches (once each, for the life of the process).
        var watched: Set<Int32> = []
        var next = 0
    }
    private static let registry = Mutex(Registry())
    private static let loop: Result<EventLoop, SocketError> = Result { () throws(SocketError) in
        let loop = try EventLoop(name: "appd-signals")
        loop.start()
        return loop
    }

    /// Calls `handler` (on the signal loop's thread; keep it short) each time `number` arrives,
    /// until the returned watch is cancelled. Deliveries that come close together may be one call.
    public static func watch(_ number: Int32, _ handler: @escaping @Sendable () -> Void) throws(SignalError) -> SignalWatch {
        let loop: EventLoop
        switch self.loop {
        case .success(let shared): loop = shared
        case .failure(let error): throw SignalError(signal: number, reason: "no signal loop: \(error)")
        }
        let fd = appd_signal_catch(number)
        guard fd >= 0 else { throw SignalError(signal: number, reason: String(cString: strerror(errno))) }
        let (id, first) = registry.withLock { r -> (Int, Bool) in
            r.next += 1
            r.handlers[number, default: [:]][r.next] = handler
            return (r.next, r.watched.insert(number).inserted)
        }
        if first {
            loop.add(fd, events: EventLoop.readable) { _, _ in
                guard appd_signal_drain(fd) > 0 else { return }
                for handler in registry.withLock({ Array(($0.handlers[number] ?? [:]).values) }) { handler() }
            }
        }
        return SignalWatch { _ = registry.withLock { $0.handlers[number]?.removeValue(forKey: id) } }
    }
}

/// A signal being watched; `cancel` stops calling its handler (the signal stays caught).
public final class SignalWatch: Sendable {
    private let stop: @Sendable () -> Void
    init(stop: @escaping @Sendable () -> Void) { self.stop = stop }
    public func cancel() { stop() }
}

/// A signal cannot be caught; says why.
public struct SignalError: Error, CustomStringConvertible {
    public let signal: Int32
    public let reason: String
    public var description: String { "cannot catch signal \(signal): \(reason)" }
}
