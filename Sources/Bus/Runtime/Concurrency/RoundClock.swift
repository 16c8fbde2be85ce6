// SPDX-License-Identifier: Apache-2.0

/// The time an event loop's round began, read once per round on the loop thread (as nginx
/// caches its time per event-loop iteration): what the loop's channels stamp their progress
/// with, instead of a clock read per send (a fan-out to 50 subscribers read the clock twice
/// per subscriber per event). Behind by at most the round's own work.
final class RoundClock: @unchecked Sendable {  // safe: `started` is written and read only on the loop thread (`EventLoop.now` checks)
    private var started = ContinuousClock.now

    /// Reads the clock for the round that begins now (loop thread).
    func startRound() { started = ContinuousClock.now }

    /// The time the current round began (loop thread).
    var now: ContinuousClock.Instant { started }
}
