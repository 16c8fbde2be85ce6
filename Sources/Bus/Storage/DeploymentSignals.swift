// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Short messages a write sends every instance of the deployment — this one included — when
/// it commits (`Transaction.signal`), for what each instance keeps in memory about the shared
/// database: the auth plugin's session cache forgets a revoked session on every instance at
/// once, and the user's open streams there check their session again.
///
/// On PostgreSQL a signal is a `NOTIFY` sent with the transaction, so it is delivered when and
/// only when the write commits; the event feed's connection LISTENs and hands each to the
/// listeners. A listener may rely on having heard of every signal committed more than
/// `staleness` ago while `isCurrent` holds: the feed confirms its link with a round trip at
/// least every 250 ms, and every signal committed before a round trip began has reached the
/// listeners once it returns. When the link breaks, `isCurrent` is false until the feed is
/// listening again, then the listeners hear `.missed` (forget everything) before anything else.
/// One instance alone (SQLite) has no signals: `Database.signals` is nil.
public final class DeploymentSignals: Sendable {
    public enum Signal: Sendable, Equatable {
        case message(String)
        /// Signals may have been lost (the link broke): forget whatever they would have changed.
        case missed
    }

    /// How old the last confirmed round trip may be for `isCurrent` to hold.
    public let staleness: Duration

    private struct State {
        var listeners: [@Sendable (Signal) -> Void] = []
        /// When the last round trip that confirmed the link began; nil while not listening.
        var confirmed: ContinuousClock.Instant?
    }
    private let state = Mutex(State())

    public init(staleness: Duration = .seconds(1)) { self.staleness = staleness }

    /// Adds a listener; it runs on the feed's thread and must not wait.
    public func listen(_ listener: @escaping @Sendable (Signal) -> Void) {
        state.withLock { $0.listeners.append(listener) }
    }

    /// Whether every signal committed more than `staleness` ago has reached the listeners.
    public var isCurrent: Bool {
        guard let confirmed = state.withLock({ $0.confirmed }) else { return false }
        return confirmed.duration(to: .now) < staleness
    }

    /// Hands a signal to every listener (the feed's thread).
    func deliver(_ signal: Signal) {
        let listeners = state.withLock { $0.listeners }
        for listener in listeners { listener(signal) }
    }

    /// Every signal committed before `instant` has been delivered.
    func confirm(_ instant: ContinuousClock.Instant) {
        state.withLock { $0.confirmed = instant }
    }

    /// The link broke: nothing is current until the feed listens again and says `.missed`.
    func lost() {
        state.withLock { $0.confirmed = nil }
    }
}
