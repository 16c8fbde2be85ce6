// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization

/// The request a `ServiceGroup` sends a service before it cancels it: finish what you are
/// doing and return (swift-service-lifecycle's graceful shutdown). Each service's task sees
/// its own signal through `gracefulShutdown()` and `cancelOnGracefulShutdown(_:)`.
public final class ShutdownSignal: Sendable {
    private struct State {
        var triggered = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
    }
    private let state = Mutex(State())

    /// The signal of the service the current task runs for, if any.
    @TaskLocal public static var current: ShutdownSignal?

    public init() {}

    public var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Asks the service to shut down gracefully (idempotent).
    public func trigger() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard !s.triggered else { return [] }
            s.triggered = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once triggered, or when the calling task is cancelled.
    func wait() async {
        let id = state.withLock { s in
            s.next += 1
            return s.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.triggered || Task.isCancelled { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// Suspends until this service is asked to shut down gracefully, or its task is cancelled.
/// Outside a service group it waits for cancellation alone.
public func gracefulShutdown() async {
    if let signal = ShutdownSignal.current {
        await signal.wait()
    } else {
        await ShutdownSignal().wait()
    }
}

/// Runs `operation` and cancels it as soon as graceful shutdown is requested: for services
/// whose work can simply stop (a periodic sweep, a consumer that resumes from its stored
/// position next time).
public func cancelOnGracefulShutdown<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            await gracefulShutdown()
            return nil
        }
        defer { group.cancelAll() }
        // The operation's own result, or nil when shutdown came first.
        guard let first = try await group.next(), let value = first else { throw CancellationError() }
        return value
    }
}
