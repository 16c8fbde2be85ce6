// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Runs a closure every `interval` until cancelled (a stream's keep-alive): set from a task on a
/// server's loop, an entry in the loop's timer list that re-arms itself each time it fires (no
/// task; within ~100 ms of the time, like `Alarm`); elsewhere a task that sleeps between firings.
public final class RepeatingAlarm: Sendable {
    private enum Kind {
        case timers(DeadlineTimers)
        case task(Task<Void, Never>)
    }
    private struct State {
        var token: Int?
        var cancelled = false
    }
    private let interval: Duration
    private let fire: @Sendable () -> Void
    private let state = Mutex(State())
    private let kind: Kind

    public init(every interval: Duration, _ fire: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.fire = fire
        if let timers = Deadline.timers {
            kind = .timers(timers)
        } else {
            // Unstructured: a repeating alarm outside a loop ticks from its own task; cancel() cancels it.
            let ticking = Task(executorPreference: Deadline.executor) {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    if !Task.isCancelled { fire() }
                }
            }
            kind = .task(ticking)
        }
        if case .timers(let timers) = kind { arm(timers) }
    }

    /// Schedules the next firing, which fires and schedules the one after it (unless cancelled
    /// meanwhile: the entry then leaves the list, and with it the last reference to this alarm).
    private func arm(_ timers: DeadlineTimers) {
        state.withLock { s in
            guard !s.cancelled else { return }
            s.token = timers.schedule(.now.advanced(by: interval)) { [self] in
                guard !state.withLock({ $0.cancelled }) else { return }
                fire()
                arm(timers)
            }
        }
    }

    /// Whether it is an entry in a loop's timer list (no task of its own).
    package var onTimerList: Bool {
        if case .timers = kind { return true }
        return false
    }

    /// No more firings (one running now finishes).
    public func cancel() {
        switch kind {
        case .timers(let timers):
            let token = state.withLock { s -> Int? in
                s.cancelled = true
                defer { s.token = nil }
                return s.token
            }
            if let token { timers.cancel(token) }
        case .task(let task):
            task.cancel()
        }
    }
}
