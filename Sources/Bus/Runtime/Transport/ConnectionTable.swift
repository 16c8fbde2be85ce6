// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The connections a server has open, by fd, and the accept loop and drain both servers share.
public final class ConnectionTable<Connection: AnyObject & Sendable>: Sendable {
    private let table = Mutex<[Int32: Connection]>([:])

    public init() {}

    /// Takes the connection out (once): nil when it was out already.
    @discardableResult
    public func remove(_ fd: Int32) -> Connection? {
        table.withLock { $0.removeValue(forKey: fd) }
    }

    public var all: [Connection] { table.withLock { Array($0.values) } }
    public var count: Int { table.withLock { $0.count } }
    public var isEmpty: Bool { table.withLock { $0.isEmpty } }

    /// Runs `body` on the table under its lock (admission decisions that must see it whole).
    public func withTable<R>(_ body: (inout [Int32: Connection]) -> R) -> R {
        table.withLock { body(&$0) }
    }

    /// Accepts every connection waiting on `listenFD` (loop thread, non-blocking) while `open`
    /// holds; `admit` takes each new fd (and owns it from then on).
    public static func acceptAll(_ listenFD: Int32, logger: Logger?, while open: () -> Bool = { true }, _ admit: (Int32) -> Void) {
        while open() {
            let fd = appd_accept(listenFD)
            guard fd >= 0 else {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK {
                    logger?.warning("accept failed", metadata: ["errno": "\(errno)"])
                }
                return
            }
            admit(fd)
        }
    }

    /// The bounded wait of a graceful shutdown: returns once `done` holds or at `deadline`.
    public static func drain(until deadline: ContinuousClock.Instant, _ done: @Sendable () -> Bool) async {
        while !done() && ContinuousClock.now < deadline {
            await sleepIgnoringCancellation(for: .milliseconds(10))
        }
    }
}
