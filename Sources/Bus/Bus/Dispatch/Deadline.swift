import Synchronization

/// Runs work against a deadline without blocking on work that ignores cancellation.
enum Deadline {
    /// Runs `operation` in a child task; at `deadline` the caller gets `timeoutError()` at once
    /// and the operation is cancelled. Cancelling the caller cancels the operation.
    static func run<R: Sendable>(
        until deadline: ContinuousClock.Instant,
        timeoutError: @escaping @Sendable () -> any Error,
        _ operation: @escaping @Sendable () async throws -> R
    ) async throws -> R {
        let race = Race<R>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.begin(continuation)
                let work = Task {
                    do { race.finish(.success(try await operation())) } catch { race.finish(.failure(error)) }
                }
                let timer = Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if !Task.isCancelled { race.finish(.failure(timeoutError())) }
                }
                race.attach(work: work, timer: timer)
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

/// The shared state of one deadline race: whoever finishes first resumes the caller and
/// cancels the other side.
private final class Race<R: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<R, any Error>?
        var result: Result<R, any Error>?
        var tasks: [Task<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// Stores the caller's continuation, or resumes it at once when the race is already
    /// decided (the caller was cancelled before the work started).
    func begin(_ continuation: CheckedContinuation<R, any Error>) {
        let decided = state.withLock { s -> Result<R, any Error>? in
            if s.result == nil { s.continuation = continuation }
            return s.result
        }
        if let decided { continuation.resume(with: decided) }
    }

    func attach(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let finished = state.withLock { s -> Bool in
            if s.result != nil { return true }
            s.tasks = [work, timer]
            return false
        }
        if finished {
            work.cancel()
            timer.cancel()
        }
    }

    func finish(_ result: Result<R, any Error>) {
        let (continuation, tasks) = state.withLock { s -> (CheckedContinuation<R, any Error>?, [Task<Void, Never>]) in
            guard s.result == nil else { return (nil, []) }
            s.result = result
            defer { s.continuation = nil; s.tasks = [] }
            return (s.continuation, s.tasks)
        }
        for task in tasks { task.cancel() }
        continuation?.resume(with: result)
    }
}
