// SPDX-License-Identifier: Apache-2.0
/// Runs a closure once, after a delay, unless cancelled first: on a server's loop an entry in
/// its timer list (fired by the loop's sweep, within ~100 ms of the time; no task), elsewhere a
/// task that sleeps. For the waits of a stream (a first-reply grace, a keep-alive), which need
/// no precision finer than that.
public struct Alarm: Sendable {
    private enum Kind {
        case timer(DeadlineTimers, Int)
        case task(Task<Void, Never>)
    }
    private let kind: Kind

    /// Sets an alarm for `delay` from now.
    public init(after delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        self.init(at: .now.advanced(by: delay), fire)
    }

    /// Sets an alarm for `deadline` (a call's deadline race keeps its timer this way too).
    public init(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) {
        if let timers = Deadline.timers {
            kind = .timer(timers, timers.schedule(deadline, fire: fire))
        } else {
            // Unstructured: an alarm outside a loop (no shared timer list) fires from its own sleeping task; cancel() cancels it.
            kind = .task(
                Task(executorPreference: Deadline.executor) {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if !Task.isCancelled { fire() }
                })
        }
    }

    /// The alarm will not fire (if it has not yet).
    public func cancel() {
        switch kind {
        case .timer(let timers, let token): timers.cancel(token)
        case .task(let task): task.cancel()
        }
    }
}
