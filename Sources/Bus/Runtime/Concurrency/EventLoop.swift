// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One epoll loop on one thread: the other of appd's two execution models (`BlockingPool` is
/// the first). Sockets register a handler that runs on the loop thread when the fd is ready;
/// Swift tasks that prefer `executor` run on the same thread between waits, so a call read by
/// the loop is decoded, dispatched and answered there without a thread hop. Call deadlines
/// (`timers`) and `onTick` handlers are swept every ~100 ms.
///
/// Handlers run on the loop thread and must not block: blocking work goes to a pool.
public final class EventLoop: Sendable {
    /// What an fd is ready for.
    public struct Readiness: Sendable {
        public var readable: Bool
        public var writable: Bool
        /// Hang-up or error: read what is left, then close.
        public var hangup: Bool
    }
    /// Runs on the loop thread; `scratch` is the loop's read buffer (64 KiB), reused.
    public typealias Handler = @Sendable (Readiness, inout [UInt8]) -> Void

    public static let readable = UInt32(APPD_EPOLL_IN)
    public static let writable = UInt32(APPD_EPOLL_OUT)

    public let name: String
    package let executor: EventLoopExecutor
    /// Deadlines fired by the loop's sweep (within ~100 ms of when they fall due).
    public let timers = DeadlineTimers()
    private let epollFD: Int32
    private let wakeFD: Int32
    /// A job and a handler, each in a type of its own: a closure kept in a collection or
    /// returned out of a lock (through their generic parameters) is re-wrapped in a fresh
    /// allocation each time, and these run for every call and every ready fd.
    private struct Job {
        let run: @Sendable () -> Void
    }
    private final class Registered: Sendable {
        let handler: Handler
        init(_ handler: @escaping Handler) { self.handler = handler }
    }
    private let handlers = Mutex<[Int32: Registered]>([:])
    private let tickers = Mutex<[@Sendable (ContinuousClock.Instant) -> Void]>([])
    private let closures = LoopQueue<Job>()
    /// Channels given bytes to send since the loop last flushed (`flushSoon`).
    private let flushes = LoopQueue<SocketChannel>()
    /// Set once `stop` was asked for (checked without the lock on every round).
    private let stopRequested = Atomic<Bool>(false)
    private enum Phase {
        case created
        case running
        /// Stop once `canStop` holds and no job is queued; then resume `stopped`.
        case stopping(canStop: @Sendable () -> Bool, stopped: CheckedContinuation<Void, Never>)
        case stopped
    }
    private let phase = Mutex(Phase.created)
    private let roundClock = RoundClock()

    public init(name: String) throws(SocketError) {
        self.name = name
        epollFD = appd_epoll_create()
        wakeFD = appd_eventfd()
        guard epollFD >= 0, wakeFD >= 0 else {
            let code = errno
            if epollFD >= 0 { close(epollFD) }
            if wakeFD >= 0 { close(wakeFD) }
            throw SocketError(operation: "epoll_create", path: name, code: code)
        }
        executor = EventLoopExecutor(wakeFD: wakeFD)
        appd_epoll_ctl(epollFD, Int32(APPD_EPOLL_ADD), wakeFD, Self.readable)
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// Starts the loop's thread (once).
    public func start() {
        let first = phase.withLock { p -> Bool in
            guard case .created = p else { return false }
            p = .running
            return true
        }
        guard first else { return }
        pthread_detach(OSThread.start(name: name) { [self] in run() })
    }

    /// Watches `fd` for `events` (`EventLoop.readable`, `.writable`); `handler` runs on the loop.
    public func add(_ fd: Int32, events: UInt32, handler: @escaping Handler) {
        let registered = Registered(handler)
        handlers.withLock { $0[fd] = registered }
        appd_epoll_ctl(epollFD, Int32(APPD_EPOLL_ADD), fd, events)
    }

    /// Changes what `fd` is watched for.
    public func modify(_ fd: Int32, events: UInt32) {
        appd_epoll_ctl(epollFD, Int32(APPD_EPOLL_MOD), fd, events)
    }

    /// Stops watching `fd` (before it is closed, so the number can be reused safely).
    public func remove(_ fd: Int32) {
        appd_epoll_ctl(epollFD, Int32(APPD_EPOLL_DEL), fd, 0)
        _ = handlers.withLock { $0.removeValue(forKey: fd) }
    }

    /// Runs `tick` on the loop every ~100 ms (timeouts, sweeps).
    public func onTick(_ tick: @escaping @Sendable (ContinuousClock.Instant) -> Void) {
        tickers.withLock { $0.append(tick) }
    }

    /// Runs `job` on the loop thread soon (in order with other `execute` jobs): the way to
    /// touch state that only the loop thread owns.
    public func execute(_ job: @escaping @Sendable () -> Void) {
        // On the loop thread the loop sees the job before it next waits: no wake-up needed.
        if closures.append(Job(run: job)) && !inLoopThread { wakeUp() }
    }

    /// Has the loop send `channel`'s queued bytes before it next waits, after the task jobs
    /// of this round and before the `execute` jobs (a close asked for after a write comes
    /// after its flush): a channel in the list has its flush queued already (`SocketChannel`
    /// keeps the flag), so a fan-out to many subscribers costs a list entry each, not a
    /// closure and a job each.
    func flushSoon(_ channel: SocketChannel) {
        if flushes.append(channel) && !inLoopThread { wakeUp() }
    }

    /// Runs `operation` in a task that prefers this loop's thread, with deadline races on the
    /// loop too (`Deadline.on`): how a server handles what it read without a thread hop.
    @discardableResult
    public func task(_ operation: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        // Unstructured: returned to the caller, which owns it (a server keeps its connections' tasks and cancels them).
        Task(executorPreference: executor) { [self] in await Deadline.on(self, operation) }
    }

    /// Whether the caller runs on the loop's thread.
    public var inLoopThread: Bool { executor.isLoopThread }

    /// The time now, to the loop's round on its thread (`RoundClock`: when the round's wait
    /// ended, without a clock read), read from the clock elsewhere. For stamps that tolerate a
    /// round's lag (a channel's last progress), not for measuring.
    public var now: ContinuousClock.Instant { inLoopThread ? roundClock.now : .now }

    /// Makes the loop go round now (after a change its predicate or handlers depend on).
    public func wakeUp() { appd_eventfd_signal(wakeFD) }

    /// Returns once the loop has stopped: when `canStop` holds (checked every round) and no
    /// task job is left to run on it. A loop never started returns at once.
    public func stop(when canStop: @escaping @Sendable () -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = phase.withLock { p -> Bool in
                switch p {
                case .created, .stopped:
                    p = .stopped
                    return true
                case .running:
                    p = .stopping(canStop: canStop, stopped: continuation)
                    stopRequested.store(true, ordering: .releasing)
                    return false
                case .stopping:
                    preconditionFailure("EventLoop.stop called twice")
                }
            }
            if resumeNow { continuation.resume() } else { wakeUp() }
        }
    }

    private func run() {
        roundClock.startRound()
        executor.bindToCurrentThread()
        var fds = [Int32](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        var scratch = [UInt8](repeating: 0, count: 65536)
        var lastSweep = ContinuousClock.now
        // The queue's jobs are swapped into this one to run: both keep their capacity.
        var running: [Job] = []
        var flushing: [SocketChannel] = []
        var taskJobs: [UnownedJob] = []
        while true {
            executor.runQueuedJobs(running: &taskJobs)
            if flushes.take(into: &flushing) {
                // Newest first: a caller's reply is queued after the deliveries its call made
                // (a publish to 50 subscribers), so it goes out first; the caller sends its next
                // call while this loop still writes to the subscribers, and the loop's next wait
                // finds it instead of sleeping (Redis writes its pending clients in the same
                // order). Each channel's own bytes keep their order.
                for channel in flushing.reversed() { channel.flush() }
                flushing.removeAll(keepingCapacity: true)
            }
            if closures.take(into: &running) {
                for job in running { job.run() }
                running.removeAll(keepingCapacity: true)
            }
            let busy = executor.hasJobs || closures.mayHoldSome || flushes.mayHoldSome
            let n = appd_epoll_wait(epollFD, &fds, &events, 256, busy ? 0 : 100)
            roundClock.startRound()
            for i in 0..<max(0, Int(n)) {
                let fd = fds[i]
                if fd == wakeFD {
                    appd_eventfd_drain(wakeFD)
                    continue
                }
                guard let registered = handlers.withLock({ $0[fd] }) else { continue }
                let flags = events[i]
                let readiness = Readiness(
                    readable: flags & Self.readable != 0, writable: flags & Self.writable != 0,
                    hangup: flags & (UInt32(APPD_EPOLL_HUP) | UInt32(APPD_EPOLL_ERR)) != 0)
                registered.handler(readiness, &scratch)
            }
            let now = ContinuousClock.now
            if now - lastSweep > .milliseconds(100) {
                lastSweep = now
                timers.fireExpired(now: now)
                for tick in tickers.withLock({ $0 }) { tick(now) }
            }
            if let stopped = readyToStop() {
                stopped.resume()
                return
            }
        }
    }

    /// The continuation to resume when a stop was asked for and its condition holds.
    private func readyToStop() -> CheckedContinuation<Void, Never>? {
        guard stopRequested.load(ordering: .acquiring), case .stopping(let canStop, let stopped) = phase.withLock({ $0 }), !executor.hasJobs, canStop() else { return nil }
        phase.withLock { $0 = .stopped }
        return stopped
    }
}
