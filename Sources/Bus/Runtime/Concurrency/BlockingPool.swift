// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The one place blocking work runs: SQLite, key derivation, fork/exec, blocking sockets.
///
/// A pool has a name (its threads show as `name` in `top -H` and profiles), at most `threads`
/// threads, started on demand, and at most `queueLimit` jobs waiting; a job offered to a full
/// queue is refused at once with `PoolBusy`, so overload is a typed error, never an unbounded
/// queue. Idle threads retire after `idleTimeout` (nil keeps them for the pool's life: the
/// plugin spawner needs that, because a child's parent-death signal follows the thread that
/// forked it). Everything else in appd runs on the event loop or Swift's cooperative pool;
/// nothing else starts an OS thread (`EventLoop` and `LogWriter` are the others).
public final class BlockingPool: @unchecked Sendable {  // safe: every mutable field is guarded by `lock`
    public let name: String
    public let threads: Int
    public let queueLimit: Int
    private let idleTimeout: Duration?

    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let drained = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `lock`:
    private var queue: [@Sendable () -> Void] = []
    private var head = 0
    private var alive = 0
    private var idle = 0
    private var running = 0
    private var closed = false

    /// Counters for status and benchmarks.
    public struct Stats: Sendable, Equatable {
        public var threads: Int
        public var idle: Int
        public var queued: Int
    }

    public init(name: String, threads: Int, queueLimit: Int, idleTimeout: Duration? = .seconds(30)) {
        precondition(threads > 0 && queueLimit >= 0, "a pool needs at least one thread")
        self.name = String(name.utf8.prefix(15))!
        self.threads = threads
        self.queueLimit = queueLimit
        self.idleTimeout = idleTimeout
        pthread_mutex_init(lock, nil)
        pthread_cond_init(wake, nil)
        pthread_cond_init(drained, nil)
    }

    deinit {
        pthread_cond_destroy(wake)
        pthread_cond_destroy(drained)
        pthread_mutex_destroy(lock)
        wake.deallocate()
        drained.deallocate()
        lock.deallocate()
    }

    public var stats: Stats {
        locked { Stats(threads: alive, idle: idle, queued: queue.count - head) }
    }

    /// Queues `job`; a thread runs it soon. Throws `PoolBusy` when `queueLimit` jobs already
    /// wait, `PoolClosed` after `shutdown`.
    public func submit(_ job: @escaping @Sendable () -> Void) throws(PoolRefusal) {
        let startThread = try lockedThrowing { () throws(PoolRefusal) -> Bool in
            guard !closed else { throw .closed(pool: name) }
            // Room: a thread for each job being run or queued, then `queueLimit` waiting.
            guard queue.count - head + running < threads + queueLimit else { throw .busy(pool: name, queueLimit: queueLimit) }
            queue.append(job)
            if idle > 0 {
                pthread_cond_signal(wake)
                return false
            }
            guard alive < threads else { return false }
            alive += 1
            return true
        }
        if startThread { pthread_detach(OSThread.start(name: name) { [self] in work() }) }
    }

    /// Runs blocking `body` on a pool thread and returns what it returns. Cancelling the caller
    /// resumes it at once with `CancellationError`; a body that has not started yet is skipped,
    /// one already running finishes and its result is dropped.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let handoff = Handoff<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                guard handoff.attach(continuation) else { return }
                do throws(PoolRefusal) {
                    try submit {
                        guard !handoff.isDone else { return }
                        handoff.finish(Result { try body() })
                    }
                } catch {
                    handoff.finish(.failure(error))
                }
            }
        } onCancel: {
            handoff.finish(.failure(CancellationError()))
        }
    }

    /// Refuses new jobs; the queued ones still run, then the threads exit. Does not wait:
    /// safe to call from async code.
    public func close() {
        locked {
            closed = true
            pthread_cond_broadcast(wake)
        }
    }

    /// `close`, then waits (up to `timeout`) until every thread has finished and exited;
    /// returns false if some were still busy at the timeout. It blocks the calling thread:
    /// call it from a thread of its own or a test, never from the cooperative pool in appd.
    @discardableResult
    public func shutdown(timeout: Duration = .seconds(10)) -> Bool {
        let until = Self.realtime(after: timeout)
        return locked {
            closed = true
            pthread_cond_broadcast(wake)
            var deadline = until
            while alive > 0 {
                if pthread_cond_timedwait(drained, lock, &deadline) == ETIMEDOUT { return alive == 0 }
            }
            return true
        }
    }

    private func work() {
        pthread_mutex_lock(lock)
        while true {
            if head < queue.count {
                let job = queue[head]
                head += 1
                if head > 64 && head * 2 > queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
                running += 1
                pthread_mutex_unlock(lock)
                job()
                pthread_mutex_lock(lock)
                running -= 1
                continue
            }
            if closed { break }
            idle += 1
            var timedOut = false
            if let idleTimeout {
                var deadline = Self.realtime(after: idleTimeout)
                timedOut = pthread_cond_timedwait(wake, lock, &deadline) == ETIMEDOUT
            } else {
                pthread_cond_wait(wake, lock)
            }
            idle -= 1
            if timedOut && head == queue.count { break }
        }
        alive -= 1
        pthread_cond_broadcast(drained)
        pthread_mutex_unlock(lock)
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    private func lockedThrowing<T>(_ body: () throws(PoolRefusal) -> T) throws(PoolRefusal) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body()
    }

    static func realtime(after duration: Duration) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let (seconds, attoseconds) = duration.components
        var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        let carry = nanoseconds / 1_000_000_000
        nanoseconds %= 1_000_000_000
        return timespec(tv_sec: now.tv_sec + Int(seconds) + carry, tv_nsec: nanoseconds)
    }
}

/// A pool would not take a job: its queue is full (retry shortly) or it was shut down.
public enum PoolRefusal: WireError, Equatable {
    case busy(pool: String, queueLimit: Int)
    case closed(pool: String)

    public var wireName: String { "io.appd.Bus.Busy" }
    public var wireParameters: [String: JSONValue] {
        switch self {
        case .busy(let pool, _), .closed(let pool): ["pool": .string(pool)]
        }
    }
    public var description: String {
        switch self {
        case .busy(let pool, let limit): "the \(pool) pool already has \(limit) jobs waiting; retry shortly, or raise its limit"
        case .closed(let pool): "the \(pool) pool is shut down (appd is stopping)"
        }
    }
}

/// One result handed from a pool thread to an async caller, exactly once.
private final class Handoff<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
    }
    private let state = Mutex(State())

    var isDone: Bool { state.withLock { $0.result != nil } }

    /// False (and the continuation resumed) when the result is already in (cancelled early).
    func attach(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let early = state.withLock { s -> Result<T, any Error>? in
            if s.result == nil { s.continuation = continuation }
            return s.result
        }
        if let early { continuation.resume(with: early) }
        return early == nil
    }

    func finish(_ result: Result<T, any Error>) {
        let continuation = state.withLock { s -> CheckedContinuation<T, any Error>? in
            guard s.result == nil else { return nil }
            s.result = result
            defer { s.continuation = nil }
            return s.continuation
        }
        continuation?.resume(with: result)
    }
}
