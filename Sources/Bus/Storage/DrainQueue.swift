// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization
import Runtime

/// The jobs waiting for one database thread. Callers append; when none is running, one drain
/// job is queued on the thread's pool, and it takes everything waiting at once (so writes that
/// arrive together are committed together) until the queue is empty. Both engines use it.
final class DrainQueue<Job: Sendable>: Sendable {
    private let state = Mutex<(jobs: [Job], draining: Bool, closed: Bool)>(([], false, false))
    let pool: BlockingPool

    init(pool: BlockingPool) { self.pool = pool }

    /// Queues `job` and starts a drain job running `drain` if none is; `closes` refuses every
    /// later job. Returns false (and queues nothing) when the queue is closed.
    @discardableResult
    func enqueue(_ job: Job, closes: Bool = false, drain: @escaping @Sendable ([Job]) -> Void) -> Bool {
        let start = state.withLock { s -> Bool? in
            guard !s.closed else { return nil }
            s.jobs.append(job)
            if closes { s.closed = true }
            defer { s.draining = true }
            return !s.draining
        }
        guard let start else { return false }
        if start { schedule { [self] in run(drain) } }
        return true
    }

    /// Refuses later jobs; true the first time.
    func close() -> Bool {
        state.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
    }

    private func run(_ drain: @Sendable ([Job]) -> Void) {
        while true {
            let jobs = state.withLock { s -> [Job] in
                if s.jobs.isEmpty { s.draining = false }
                defer { s.jobs.removeAll(keepingCapacity: true) }
                return s.jobs
            }
            if jobs.isEmpty { return }
            drain(jobs)
        }
    }

    /// The pool's queue holds at most this one drain job, so it never refuses it; if it did,
    /// the failure is loud rather than a caller left waiting forever.
    private func schedule(_ job: @escaping @Sendable () -> Void) {
        do throws(PoolRefusal) {
            try pool.submit(job)
        } catch {
            preconditionFailure("the \(pool.name) pool refused a database drain job: \(error)")
        }
    }
}
