// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization

/// The one timeout in appd, with one meaning: at `deadline` the caller gets `timeoutError()`
/// at once and `operation` is cancelled; work that finishes late cannot commit an effect after
/// its caller was told it failed.
///
/// The last point is kept by `DeadlineClaim`: storage asks `Deadline.claim()` just before it
/// makes a write durable. Before the deadline the claim succeeds and the race is decided for
/// the work (the caller then gets the commit's outcome, even if the fsync ends past the
/// deadline); after it, the claim fails and the write is rolled back. Cancelling the caller
/// cancels the operation the same way.
public func withDeadline<R: Sendable>(
    _ deadline: ContinuousClock.Instant,
    timeoutError: @escaping @Sendable () -> any Error,
    _ operation: @escaping @Sendable () async throws -> R
) async throws -> R {
    try await Deadline.run(until: deadline, timeoutError: timeoutError, operation)
}

/// `withDeadline` after `limit` from now.
public func withTimeout<R: Sendable>(
    _ limit: Duration,
    timeoutError: @escaping @Sendable () -> any Error,
    _ operation: @escaping @Sendable () async throws -> R
) async throws -> R {
    try await Deadline.run(until: .now.advanced(by: limit), timeoutError: timeoutError, operation)
}

/// Sleeps for `duration` even when the calling task is cancelled: for the bounded waits of a
/// shutdown that was itself started by cancellation (a drain must still wait, not spin).
public func sleepIgnoringCancellation(for duration: Duration) async {
    // Unstructured: detached so that the caller's cancellation does not cut the sleep short; awaited at once.
    await Task.detached { try? await Task.sleep(for: duration) }.value
}

/// The work of a deadline race, as seen from inside it: storage claims the race before it
/// commits.
public protocol DeadlineClaim: AnyObject, Sendable {
    /// Decides this race (and any enclosing one) for the work: true means no timeout or
    /// cancellation can fail the caller any more, so the effect may be committed; false means
    /// the caller was already told it failed, so the effect must not happen.
    func claim() -> Bool
}

/// Runs work against a deadline without blocking on work that ignores cancellation.
public enum Deadline {
    /// Where the race's tasks run: the server's event loop for socket calls, so a call with a
    /// deadline does not hop threads; nil means the global executor.
    package static var executor: (any TaskExecutor)? { loop?.executor }
    /// A shared timer list (the server's loop sweeps it) used instead of one timer task per call.
    package static var timers: DeadlineTimers? { loop?.timers }
    /// The loop the current task's calls are read on. One task-local, not one each for the
    /// executor and the timers: every `withValue` is a frame that every connection's and every
    /// stream's task holds while it waits.
    @TaskLocal static var loop: EventLoop?
    /// Runs `body` with deadline races on `loop`: their tasks on its executor, their timers in
    /// its sweep (what a server does for the calls it reads on that loop).
    public static func on(_ loop: EventLoop, _ body: () async -> Void) async {
        await $loop.withValue(loop) { await body() }
    }

    /// The innermost deadline race the current task works for, if any.
    @TaskLocal public static var current: (any DeadlineClaim)?

    /// Claims every deadline race the current task works for (see `DeadlineClaim.claim`);
    /// true when there is none.
    public static func claim() -> Bool { current?.claim() ?? true }

    /// Runs `operation` in a task of its own; at `deadline` the caller gets `timeoutError()` at
    /// once and the operation is cancelled. Cancelling the caller cancels the operation.
    static func run<R: Sendable>(
        until deadline: ContinuousClock.Instant,
        timeoutError: @escaping @Sendable () -> any Error,
        _ operation: @escaping @Sendable () async throws -> R
    ) async throws -> R {
        let value = try await race(until: deadline, timeoutError: timeoutError) { try await operation() as any Sendable }
        // The race returns what `operation` returned: an R.
        return value as! R  // safe: the only value race can return is the operation's own
    }

    /// The race itself, not generic: a generic race instantiated its types' metadata on every
    /// call (Runtime's generic code is not specialised for its callers in other modules).
    private static func race(
        until deadline: ContinuousClock.Instant,
        timeoutError: @escaping @Sendable () -> any Error,
        _ operation: @escaping @Sendable () async throws -> any Sendable
    ) async throws -> any Sendable {
        let race = Race(parent: current)
        return try await withTaskCancellationHandler {
            // Unsafe is safe here: `Race` resumes the continuation exactly once (the first
            // `finish` takes it out under the lock; `begin` resumes only a decided race).
            try await withUnsafeThrowingContinuation { continuation in
                race.begin(continuation)
                // The work starts right here, on this thread, and runs until it first
                // suspends: a call that never suspends is decided before a timer is set, and
                // the caller does not suspend at all (twice the in-process rate with a deadline).
                let work = Task.immediate(executorPreference: executor) {
                    do {
                        let value = try await Deadline.$current.withValue(race) { try await operation() }
                        race.finish(.success(value), byWork: true)
                    } catch {
                        race.finish(.failure(error), byWork: true)
                    }
                }
                // Decided already: by the work itself, or by a caller cancelled before it began
                // (then the work, which has just suspended, is cancelled too).
                guard !race.isDecided else { return work.cancel() }
                let alarm = Alarm(at: deadline) { race.finish(.failure(timeoutError())) }
                race.attach {
                    work.cancel(); alarm.cancel()
                }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

/// Deadlines kept in one list and fired by whoever sweeps it (the server's I/O loop), so a call
/// with a deadline costs a list insert instead of a timer task.
public final class DeadlineTimers: Sendable {
    private struct State {
        var entries: [Int: (deadline: ContinuousClock.Instant, fire: @Sendable () -> Void)] = [:]
        var next = 0
    }
    private let state = Mutex(State())

    public init() {}

    func schedule(_ deadline: ContinuousClock.Instant, fire: @escaping @Sendable () -> Void) -> Int {
        state.withLock { s in
            s.next += 1
            s.entries[s.next] = (deadline, fire)
            return s.next
        }
    }

    func cancel(_ token: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: token) }
    }

    /// Fires every deadline that has passed.
    public func fireExpired(now: ContinuousClock.Instant = .now) {
        let due = state.withLock { s -> [@Sendable () -> Void] in
            let expired = s.entries.filter { $0.value.deadline <= now }
            for key in expired.keys { s.entries[key] = nil }
            return expired.map(\.value.fire)
        }
        for fire in due { fire() }
    }
}

/// The shared state of one deadline race: whoever finishes first resumes the caller and
/// cancels the other side. Once the work has claimed the race (it is committing), only the
/// work's own result can finish it.
private final class Race: DeadlineClaim {
    typealias R = any Sendable
    /// The race the caller itself works for, if any: claimed too.
    private let parent: (any DeadlineClaim)?
    init(parent: (any DeadlineClaim)?) { self.parent = parent }

    private struct State {
        var continuation: UnsafeContinuation<R, any Error>?
        var result: Result<R, any Error>?
        var claimed = false
        var decidedByWork = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    /// Stores the caller's continuation, or resumes it at once when the race is already
    /// decided (the caller was cancelled before the work started).
    func begin(_ continuation: UnsafeContinuation<R, any Error>) {
        let decided = state.withLock { s -> Result<R, any Error>? in
            if s.result == nil { s.continuation = continuation }
            return s.result
        }
        if let decided { continuation.resume(with: decided) }
    }

    /// What to do once the race is decided (cancel the losers); runs now if it already is.
    func attach(cleanup: @escaping @Sendable () -> Void) {
        let finished = state.withLock { s -> Bool in
            if s.result != nil { return true }
            s.cleanup = cleanup
            return false
        }
        if finished { cleanup() }
    }

    var isDecided: Bool { state.withLock { $0.result != nil } }

    /// The work is about to commit: false if the caller was already told it failed (timed
    /// out or cancelled). A race the work itself decided does not stop later effects of tasks
    /// it started (a stream's body, say): they are not what the caller waited for.
    func claim() -> Bool {
        let claimed = state.withLock { s in
            guard s.result == nil else { return s.decidedByWork }
            s.claimed = true
            return true
        }
        return claimed && (parent?.claim() ?? true)
    }

    func finish(_ result: Result<R, any Error>, byWork: Bool = false) {
        let (continuation, cleanup) = state.withLock { s -> (UnsafeContinuation<R, any Error>?, (@Sendable () -> Void)?) in
            guard s.result == nil, byWork || !s.claimed else { return (nil, nil) }
            s.result = result
            s.decidedByWork = byWork
            defer { s.continuation = nil; s.cleanup = nil }
            return (s.continuation, s.cleanup)
        }
        cleanup?()
        continuation?.resume(with: result)
    }
}
