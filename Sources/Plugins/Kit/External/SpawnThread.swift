#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import Dispatch
import Synchronization

/// The one thread that forks plugins. It lives as long as appd, because the parent-death
/// signal that stops a plugin when appd dies follows the thread that forked it, not the
/// process: a plugin forked from a pool thread that later exits would be killed with it.
final class SpawnThread: Sendable {
    static let shared = SpawnThread()

    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let wake = DispatchSemaphore(value: 0)

    private init() {
        pthread_detach(OSThread.start(name: "plugin-spawn") { [self] in
            while true {
                wake.wait()
                for job in jobs.withLock({ q in defer { q.removeAll() }; return q }) { job() }
            }
        })
    }

    /// Runs `body` on the spawning thread and returns what it returns (a fork takes about a
    /// millisecond; the caller waits for it).
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        jobs.withLock {
            $0.append {
                let value = body()
                result.withLock { $0 = value }
                done.signal()
            }
        }
        wake.signal()
        done.wait()
        // Set before `done` was signalled.
        guard let value = result.withLock({ $0 }) else { preconditionFailure("the spawn job ran without a result") }
        return value
    }
}
