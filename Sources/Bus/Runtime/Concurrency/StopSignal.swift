// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// A request to stop one piece of work that runs in some task's frames, without cancelling that
/// task: a chat reply's provider is stopped by `Chat.Cancel` from another connection while the
/// call itself goes on to store the partial reply and answer with it. (Cancelling the task would
/// take the call with it; a task of its own per reply, only to be cancellable, costs its frames.)
///
/// Whoever waits registers what stopping means for it (`onStop`: close an upstream connection,
/// end a stream) and removes it when the wait is over; `stop()` runs every action registered,
/// once, and any registered later at once.
public final class StopSignal: Sendable {
    private struct State {
        var stopped = false
        var actions: [Int: @Sendable () -> Void] = [:]
        var next = 0
    }
    private let state = Mutex(State())

    public init() {}

    /// Whether `stop()` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Stops: runs the actions registered (outside the lock, once each).
    public func stop() {
        let actions = state.withLock { s -> [@Sendable () -> Void] in
            guard !s.stopped else { return [] }
            s.stopped = true
            defer { s.actions = [:] }
            return Array(s.actions.values)
        }
        for action in actions { action() }
    }

    /// Runs `action` when stopped, or now when stopped already (then the token is nil). Remove a
    /// token once what it stops is over, or the action stays with the signal.
    @discardableResult
    public func onStop(_ action: @escaping @Sendable () -> Void) -> Int? {
        let token = state.withLock { s -> Int? in
            guard !s.stopped else { return nil }
            s.next += 1
            s.actions[s.next] = action
            return s.next
        }
        if token == nil { action() }
        return token
    }

    /// Forgets an action registered with `onStop`.
    public func remove(_ token: Int?) {
        guard let token else { return }
        _ = state.withLock { $0.actions.removeValue(forKey: token) }
    }

    /// What a wait that was stopped throws.
    public struct Stopped: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "stopped" }
    }
}
