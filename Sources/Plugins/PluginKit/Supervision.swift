// SPDX-License-Identifier: Apache-2.0
import Contracts
/// How a supervised plugin comes back after a failure: capped exponential backoff from
/// `initialBackoff`; a run that lasted `healthyAfter` counts as healthy (the count of quick
/// failures starts over); after `maxQuickFailures` quick failures in a row it is given up.
public struct RestartPolicy: Sendable, Equatable {
    public var initialBackoff: Duration
    public var maxBackoff: Duration
    public var healthyAfter: Duration
    /// nil: never given up (a built-in plugin's services).
    public var maxQuickFailures: Int?

    public init(initialBackoff: Duration, maxBackoff: Duration, healthyAfter: Duration, maxQuickFailures: Int? = nil) {
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.healthyAfter = healthyAfter
        self.maxQuickFailures = maxQuickFailures
    }
}

/// One plugin's supervision record, the same for a built-in plugin (whose services are
/// restarted) and an external one (whose process is): its state, its last error, how often it
/// was restarted, and what to do after a failure. `appctl plugins` shows it as `PluginStatus`.
public struct Supervision: Sendable {
    public enum Next: Sendable, Equatable {
        case restart(after: Duration)
        /// Too many quick failures: it stays `failed` until restarted by hand.
        case giveUp
    }

    public let plugin: String
    public var policy: RestartPolicy
    public private(set) var state: PluginState
    /// Why it last failed or was refused; kept after a restart (why it was restarted) until a
    /// manual restart.
    public var lastError: String?
    public private(set) var restarts = 0
    private var quickFailures = 0
    private var lastFailure: ContinuousClock.Instant?
    /// Failed and waiting out its backoff: not running, however long ago it failed.
    private var awaitingRestart = false

    public init(plugin: String, policy: RestartPolicy, state: PluginState = .stopped, lastError: String? = nil) {
        self.plugin = plugin
        self.policy = policy
        self.state = state
        self.lastError = lastError
    }

    public mutating func starting() {
        state = .starting
        awaitingRestart = false
    }

    public mutating func running() { state = .running }

    /// Stopped on purpose (or exited cleanly when that is allowed).
    public mutating func stopped() { state = .stopped }

    /// It cannot run until something is fixed (its configuration, its manifest): `failed`,
    /// not restarted.
    public mutating func refused(_ reason: String) {
        state = .failed
        lastError = reason
    }

    /// It failed after running for `ranFor` (nil: it never got going): restart after the
    /// returned delay (`degraded` meanwhile), or give up (`failed`).
    public mutating func failed(_ reason: String, ranFor: Duration?, at now: ContinuousClock.Instant = .now) -> Next {
        let quick = ranFor.map { $0 < policy.healthyAfter } ?? true
        quickFailures = quick ? quickFailures + 1 : 1
        lastFailure = now
        lastError = reason
        if let limit = policy.maxQuickFailures, quickFailures > limit {
            state = .failed
            lastError = "\(reason); gave up after \(quickFailures - 1) restarts (appctl plugins restart \(plugin) tries again)"
            return .giveUp
        }
        state = .degraded
        awaitingRestart = true
        var delay = policy.initialBackoff
        for _ in 1..<quickFailures { delay = min(delay * 2, policy.maxBackoff) }
        return .restart(after: delay)
    }

    /// A restart begins: after a failure, or by hand (which forgets the failures).
    public mutating func restarting(manual: Bool) {
        restarts += 1
        awaitingRestart = false
        if manual {
            quickFailures = 0
            lastError = nil
        }
    }

    /// The state to show: a degraded plugin that was restarted and has gone `healthyAfter`
    /// without failing is running again.
    public func reportedState(at now: ContinuousClock.Instant = .now) -> PluginState {
        if state == .degraded, !awaitingRestart, let lastFailure, now - lastFailure > policy.healthyAfter { return .running }
        return state
    }
}
