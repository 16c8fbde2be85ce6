// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// Starts an OS thread. Only `EventLoop`, `BlockingPool` and `LogWriter` call it: everything
/// else in appd runs on one of those or on Swift's cooperative pool.
enum OSThread {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Runs `body` on a new joinable thread and returns its handle. `name` (at most 15 bytes)
    /// shows in `top -H`, `ps -L` and profiles.
    static func start(name: String? = nil, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        let named: @Sendable () -> Void = {
            if let name { appd_set_thread_name(name) }
            body()
        }
        let box = Unmanaged.passRetained(Box(named)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { raw in
                // Safe: `raw` is the retained Box passed below; taken back exactly once here.
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")  // only fails when the process is out of threads
        return thread
    }
}
