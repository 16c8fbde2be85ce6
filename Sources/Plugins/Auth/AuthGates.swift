import Bus

/// Resolves the connection's token against the session store on every call, so a sign-out or
/// a disabled account takes effect on the very next call on every connection. Commands that
/// need `.session` fail without a valid one; others just run without a principal.
struct SessionGate: Gate {
    let service: AuthService
    var name: String { "session" }

    func covers(_ requirement: Requirement) -> Bool { requirement == .session }

    /// A call with a session token is resolved even when it does not require one (a handler
    /// may use the principal); a call with neither passes by.
    func applies(to envelope: Envelope) -> Bool {
        envelope.caller.sessionToken != nil || envelope.caller.connection?.sessionToken != nil
            || envelope.requirements.contains(where: Self.needsAccount)
    }

    /// The requirements that need a signed-in account.
    static func needsAccount(_ requirement: Requirement) -> Bool { requirement == .session || requirement == .onboarded || requirement == .verifiedEmail }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        let needed = envelope.requirements.contains(where: Self.needsAccount)
        guard let token = envelope.caller.sessionToken ?? envelope.caller.connection?.sessionToken else {
            if needed { throw AuthError.unauthenticated }
            return try await next(envelope)
        }
        var envelope = envelope
        do {
            let record = try await service.resolve(accessToken: token.value)
            envelope.caller.sessionToken = token
            envelope.caller.principal = Principal(
                userID: record.id, email: record.address, onboarded: record.onboardedAt != nil, emailVerified: record.emailVerified)
        } catch let error as AuthError {
            if needed { throw error }
        }
        return try await next(envelope)
    }
}

/// `.onboarded` needs the account's persisted onboarding completion (as resolved just now by
/// the session gate).
struct OnboardingGate: Gate {
    var name: String { "onboarding" }

    func covers(_ requirement: Requirement) -> Bool { requirement == .onboarded }

    func applies(to envelope: Envelope) -> Bool { envelope.requirements.contains(.onboarded) }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        guard applies(to: envelope) else { return try await next(envelope) }
        guard let principal = envelope.caller.principal else { throw AuthError.unauthenticated }
        guard principal.onboarded else { throw AuthError.onboardingRequired }
        return try await next(envelope)
    }
}

/// `.verifiedEmail` needs the account's email verified (as resolved just now by the session gate).
struct VerifiedEmailGate: Gate {
    var name: String { "verifiedEmail" }

    func covers(_ requirement: Requirement) -> Bool { requirement == .verifiedEmail }

    func applies(to envelope: Envelope) -> Bool { envelope.requirements.contains(.verifiedEmail) }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        guard applies(to: envelope) else { return try await next(envelope) }
        guard let principal = envelope.caller.principal else { throw AuthError.unauthenticated }
        guard principal.emailVerified else { throw AuthError.emailNotVerified }
        return try await next(envelope)
    }
}
