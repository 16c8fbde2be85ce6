// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Runs Swift tasks on the server's I/O thread, between epoll waits (as an event loop does).
///
/// Connection workers prefer this executor, so a call read by the I/O thread is decoded,
/// dispatched and answered on that same thread: no hand-off to another thread per call.
/// Work that awaits an actor or another executor hops away and comes back here.
package final class EventLoopExecutor: TaskExecutor {
    private let jobs = LoopQueue<UnownedJob>()
    private let wakeFD: Int32
    /// The loop thread (0 until it starts); enqueues from it need no wake-up.
    private let loopThread = Atomic<UInt>(0)

    init(wakeFD: Int32) { self.wakeFD = wakeFD }

    package func enqueue(_ job: consuming ExecutorJob) {
        if jobs.append(UnownedJob(job)) && !isLoopThread { appd_eventfd_signal(wakeFD) }
    }

    var isLoopThread: Bool {
        let thread = loopThread.load(ordering: .acquiring)
        return thread != 0 && pthread_equal(pthread_t(thread), pthread_self()) != 0
    }

    /// Called once from the loop thread before it runs jobs.
    func bindToCurrentThread() {
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
    }

    var hasJobs: Bool { !jobs.isEmpty }

    /// Runs queued jobs, and the jobs they enqueue, for at most `rounds` rounds, so one call's
    /// chain of continuations finishes without going back to epoll, yet I/O is never starved.
    /// `running` is the loop's own array: the queue is swapped with it, so both keep their
    /// capacity (taking a copy and emptying the queue allocated a new array every round).
    func runQueuedJobs(rounds: Int = 16, running: inout [UnownedJob]) {
        for _ in 0..<rounds {
            guard jobs.take(into: &running) else { return }
            for job in running { job.runSynchronously(on: asUnownedTaskExecutor()) }
            running.removeAll(keepingCapacity: true)
        }
    }
}
