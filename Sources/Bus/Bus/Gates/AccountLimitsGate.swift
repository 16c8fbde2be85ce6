// SPDX-License-Identifier: Apache-2.0
/// The limits gate: each signed-in account may make `perMinute` calls a minute (a burst of
/// `burst`), over both transports, or gets `RateLimited` with the seconds to wait (security
/// review finding 9: one free account wrote hundreds of megabytes in seconds and slowed
/// everyone's calls). It runs right after the session gate, which resolves the account.
/// Callers without an account (admins, plugins, the daemon) pass: they are limited elsewhere
/// (connections per uid, plugins' own call limits).
public struct AccountLimitsGate: Gate {
    /// The accounts' buckets (shared across instances by `SharedRateLimits`).
    public let limiter: RateLimiter
    public var name: String { "limits" }
    public var position: GatePosition { .limits }
    public var deciding: Deciding { .always }

    public init(perMinute: Int, burst: Int, trackedAccounts: Int = 100_000) {
        self.limiter = RateLimiter(perMinute: perMinute, burst: burst, trackedClients: trackedAccounts)
    }

    public func applies(to envelope: Envelope) -> Bool { envelope.caller.principal != nil }

    /// A method that needs a signed-in account is called with one: it may be `RateLimited`.
    public func errors(answering requirements: [Requirement]) -> [String] {
        let account = requirements.contains { $0 == .session || $0 == .onboarded || $0 == .verifiedEmail }
        return account ? [RateLimited(retryAfterSeconds: 0).wireName] : []
    }

    /// Decided from the account's bucket in memory, always without waiting.
    public func decide(_ envelope: inout Envelope) -> GateDecision {
        if let account = envelope.caller.principal?.userID, let wait = limiter.take(account) {
            return .deny(RateLimited(retryAfterSeconds: wait))
        }
        return .pass
    }

    public func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        try await handleByDeciding(envelope, next: next)
    }
}
