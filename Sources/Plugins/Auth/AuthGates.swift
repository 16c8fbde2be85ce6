// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// Resolves the connection's token against the session store on every call, so a sign-out or
/// a disabled account takes effect on the very next call on every connection. Commands that
/// need `.session` fail without a valid one; others just run without a principal.
struct SessionGate: Gate {
    let service: AuthService
    var name: String { "session" }
    var position: GatePosition { .session }
    /// From the session cache; a token it does not hold is read in `handle`.
    var deciding: Deciding { .sometimes }

    func covers(_ requirement: Requirement) -> Bool { requirement == .session }

    /// A call with a session token is resolved even when it does not require one (a handler
    /// may use the principal); a call with neither passes by.
    func applies(to envelope: Envelope) -> Bool {
        envelope.caller.sessionToken != nil || envelope.caller.connection?.sessionToken != nil
            || envelope.requirements.contains(where: Self.needsAccount)
    }

    func errors(answering requirements: [Requirement]) -> [String] {
        guard requirements.contains(where: Self.needsAccount) else { return [] }
        return [AuthError.unauthenticated, .sessionExpired, .accountDisabled].map(\.wireName)
    }

    /// The requirements that need a signed-in account.
    static func needsAccount(_ requirement: Requirement) -> Bool { requirement == .session || requirement == .onboarded || requirement == .verifiedEmail }

    /// Decided without waiting when the session is in the cache (or there is no token); a
    /// token the cache does not hold is read from the store in `handle`.
    func decide(_ envelope: inout Envelope) -> GateDecision {
        let needed = envelope.requirements.contains(where: Self.needsAccount)
        guard let token = envelope.caller.sessionToken ?? envelope.caller.connection?.sessionToken else {
            return needed ? .deny(AuthError.unauthenticated) : .pass
        }
        switch service.resolveCached(accessToken: token.value) {
        case nil:
            return .handle
        case .success(let entry)?:
            Self.signIn(&envelope, token, entry)
            return .pass
        case .failure(let error)?:
            return needed ? .deny(error) : .pass
        }
    }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        let needed = envelope.requirements.contains(where: Self.needsAccount)
        guard let token = envelope.caller.sessionToken ?? envelope.caller.connection?.sessionToken else {
            if needed { throw AuthError.unauthenticated }
            return try await next(envelope)
        }
        var envelope = envelope
        do {
            Self.signIn(&envelope, token, try await service.resolveEntry(accessToken: token.value))
        } catch let error as AuthError {
            if needed { throw error }
        }
        return try await next(envelope)
    }

    /// The call acts as the session's account.
    /// (The cache's entry, its record's fields read in place: passing the record would copy it.)
    private static func signIn(_ envelope: inout Envelope, _ token: SessionToken, _ entry: SessionCache<UserRecord>.Entry) {
        // A token from the connection goes with the call (one that came with it is there).
        if envelope.caller.sessionToken == nil { envelope.caller.sessionToken = token }
        envelope.caller.principal = Principal(
            userID: entry.record.id, email: entry.record.address, onboarded: entry.record.onboardedAt != nil, emailVerified: entry.record.emailVerified)
    }
}

/// A requirement about the signed-in account's standing, read from the principal the session
/// gate resolved just now: `.onboarded` (onboarding completed) and `.verifiedEmail`.
struct AccountStandingGate: Gate {
    let name: String
    let position: GatePosition
    let requirement: Requirement
    let holds: @Sendable (Principal) -> Bool
    let refusal: AuthError
    var deciding: Deciding { .always }

    static let onboarding = AccountStandingGate(name: "onboarding", position: .onboarding, requirement: .onboarded, holds: { $0.onboarded }, refusal: .onboardingRequired)
    static let verifiedEmail = AccountStandingGate(
        name: "verifiedEmail", position: .verifiedEmail, requirement: .verifiedEmail, holds: { $0.emailVerified }, refusal: .emailNotVerified)

    func covers(_ requirement: Requirement) -> Bool { requirement == self.requirement }

    /// By the method's requirement alone (so `mayApply` is exact).
    func applies(to envelope: Envelope) -> Bool { mayApply(toMethodRequiring: envelope.requirements) }
    func mayApply(toMethodRequiring requirements: [Requirement]) -> Bool { requirements.contains(requirement) }

    func errors(answering requirements: [Requirement]) -> [String] { requirements.contains(requirement) ? [refusal.wireName] : [] }

    /// Decided from the principal the session gate set, always without waiting.
    func decide(_ envelope: inout Envelope) -> GateDecision {
        guard applies(to: envelope) else { return .pass }
        guard let principal = envelope.caller.principal else { return .deny(AuthError.unauthenticated) }
        return holds(principal) ? .pass : .deny(refusal)
    }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        try await handleByDeciding(envelope, next: next)
    }
}
