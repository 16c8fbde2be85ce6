// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// A call's deadline kept by its caller instead of raced by a task: for a transport whose task is
/// itself the work (the HTTP server's request task, a socket connection's worker), so a call
/// costs that one task. The transport sets an `Alarm` at `deadline` that calls `expire()`; when
/// that decides it (the work has not claimed it yet), the transport answers the timeout itself
/// and lets the work's task go (HTTP cancels it; the socket cancels its worker and hands the
/// connection to a new one), and the work — which may go on until it notices — can no longer
/// commit: its `claim()` fails, so a late write is rolled back, as `withDeadline` promises.
///
/// It stands for one call, `method`: the first `withDeadline` for that method in the task that
/// `keep` runs (`take`) runs its work right there, with no race; every other one (a call the
/// handler makes, one in a task it starts) races as usual, under this claim.
public final class KeptDeadline: DeadlineClaim {
    public let method: String
    public let deadline: ContinuousClock.Instant
    private let parent: (any DeadlineClaim)?
    private struct State {
        var claimed = false
        var expired = false
        var taken = false
    }
    private let state = Mutex(State())

    public init(method: String, deadline: ContinuousClock.Instant) {
        self.method = method
        self.deadline = deadline
        self.parent = Deadline.current
    }

    /// Runs `body` with this as the current task's deadline claim.
    public func keep<R>(_ body: () async throws -> R) async rethrows -> R {
        try await Deadline.$current.withValue(self) { try await body() }
    }

    /// The deadline has passed: true when that decides the call for its caller (who then
    /// answers the timeout); false when the work had claimed it (it commits; wait for it).
    public func expire() -> Bool {
        state.withLock { s in
            guard !s.claimed else { return false }
            s.expired = true
            return true
        }
    }

    /// Whether `expire` decided the call.
    public var expired: Bool { state.withLock { $0.expired } }

    public func claim() -> Bool {
        let claimed = state.withLock { s in
            guard !s.expired else { return false }
            s.claimed = true
            return true
        }
        return claimed && (parent?.claim() ?? true)
    }

    /// Whether a `withDeadline` for `method`, due at `due`, is the call this keeps (once).
    package func take(for method: String, due: ContinuousClock.Instant) -> Bool {
        guard method == self.method, deadline <= due else { return false }
        return state.withLock { s in
            guard !s.taken else { return false }
            s.taken = true
            return true
        }
    }
}
