// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Runs a signed-in user's stream for as long as the session that opened it holds: the
/// session is checked again through the gates whenever the account's sessions change
/// (`SessionStreams.changed`), every `sessionRecheck` (expiry; revocations made by another
/// instance), and the stream ends after `maxUserStreamLifetime`. A failed check ends the
/// stream with the session gate's error.
///
/// No task of its own while the stream waits (thousands stay open): the body runs in the
/// caller's task, the periodic check is an `Alarm` (an entry in the server loop's timer list),
/// and a check runs in a short task only when one is due. A failed check stops `stop`: the
/// body (a `SubscriptionFeed`) delivers nothing after it and ends at its next step — at once
/// when it waits for events; a write the client has not read yet is finished first (bounded
/// by the stalled-stream timeout).
struct SessionBoundStream: Sendable {
    let bus: EventBus
    /// The caller as the stream's session alone identifies it.
    let caller: Caller
    let userID: String
    let limits: SubscribeLimits

    func run(stop: StopSignal, _ body: () async throws -> Void) async throws {
        let checks = SessionChecks(bus: bus, caller: caller, stop: stop, limits: limits)
        let watch = try bus.sessionStreams.open(userID: userID, limit: limits.maxStreamsPerAccount) { checks.check() }
        defer { bus.sessionStreams.close(watch) }
        checks.start()
        defer { checks.finish() }
        do {
            try await body()
        } catch {
            throw checks.failure ?? error
        }
        if let failure = checks.failure { throw failure }
    }
}

/// The checks of one session-bound stream: one at a time (a wake while one runs runs another
/// after it), the periodic one and the end of the stream's lifetime kept by an alarm.
final class SessionChecks: Sendable {
    private struct State {
        var failure: (any Error)?
        var running = false
        var again = false
        var finished = false
        var alarm: Alarm?
        var task: Task<Void, Never>?
    }
    private let state = Mutex(State())
    let bus: EventBus
    let caller: Caller
    let stop: StopSignal
    let limits: SubscribeLimits
    let end: ContinuousClock.Instant

    init(bus: EventBus, caller: Caller, stop: StopSignal, limits: SubscribeLimits) {
        self.bus = bus
        self.caller = caller
        self.stop = stop
        self.limits = limits
        self.end = ContinuousClock.now.advanced(by: limits.maxUserStreamLifetime)
    }

    /// Why the stream was ended, if it was.
    var failure: (any Error)? { state.withLock { $0.failure } }

    /// Sets the first alarm.
    func start() { schedule() }

    /// The stream is over: no more alarms or checks.
    func finish() {
        let (alarm, task) = state.withLock { s in
            s.finished = true
            defer { s.alarm = nil; s.task = nil }
            return (s.alarm, s.task)
        }
        alarm?.cancel()
        task?.cancel()
    }

    /// Checks the session now (or after the check running now).
    func check() {
        let start = state.withLock { s -> Bool in
            guard !s.finished, s.failure == nil else { return false }
            guard !s.running else {
                s.again = true
                return false
            }
            s.running = true
            return true
        }
        guard start else { return }
        // Unstructured: the recheck lives as long as the stream, not the call that opened it; cancelled when the stream ends.
        let task = Task { [self] in
            while true {
                do {
                    _ = try await bus.send(BusInterface.CheckSession(), as: caller)
                } catch {
                    if !Task.isCancelled { fail(error) }
                    return
                }
                let more = state.withLock { s -> Bool in
                    guard s.again, !s.finished else {
                        s.running = false
                        return false
                    }
                    s.again = false
                    return true
                }
                if !more { return }
            }
        }
        state.withLock { s in if s.running, !s.finished { s.task = task } }
    }

    /// The next periodic check, or the end of the lifetime, whichever comes first.
    private func schedule() {
        let next = min(ContinuousClock.now.advanced(by: limits.sessionRecheck), end)
        let alarm = Alarm(at: next) { [self] in fired() }
        let keep = state.withLock { s -> Bool in
            guard !s.finished else { return false }
            s.alarm = alarm
            return true
        }
        if !keep { alarm.cancel() }
    }

    private func fired() {
        if ContinuousClock.now >= end {
            return fail(StreamLifetimeEnded(seconds: max(1, Int(limits.maxUserStreamLifetime.components.seconds))))
        }
        check()
        schedule()
    }

    private func fail(_ error: any Error) {
        let first = state.withLock { s -> Bool in
            guard s.failure == nil else { return false }
            s.failure = error
            return true
        }
        if first { stop.stop() }
    }
}
