// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The typed errors of `io.appd.Auth`.
public enum AuthError: InterfaceError {
    public static let interface = "io.appd.Auth"

    case invalidCredentials
    case validationFailed(field: String, reason: String)
    case unauthenticated
    case sessionExpired
    case onboardingRequired
    case tooManyAttempts(retryAfterSeconds: Int)
    case accountDisabled
    case busy
    case invalidResetToken
    case notFound
    /// Which check refused the ID token.
    case invalidIdToken(reason: IdTokenRefusal)
    case providerNotConfigured(provider: String)
    case identityProviderUnavailable(provider: String)
    case accountExistsForEmail
    case identityInUse
    case providerAlreadyLinked(provider: String)
    case identityNotLinked
    case lastSignInMethod
    case reauthenticationRequired
    case emailNotVerified
    case invalidVerificationToken
    case guestsDisabled
    case notAGuest

    public static func validation(_ field: String, _ reason: String) -> AuthError { .validationFailed(field: field, reason: reason) }

    public var description: String {
        switch self {
        case .invalidCredentials: "wrong email or password"
        case .validationFailed(let field, let reason): "\(field): \(reason)"
        case .unauthenticated: "not signed in; run 'appctl login'"
        case .sessionExpired: "the session expired; sign in again or refresh it"
        case .onboardingRequired: "finish onboarding first ('appctl onboard')"
        case .tooManyAttempts(let seconds): "too many failed sign-ins; retry in \(seconds) s"
        case .accountDisabled: "this account is disabled; ask an administrator"
        case .busy: "too many sign-ins in progress; retry in a moment"
        case .invalidResetToken: "the reset token is unknown, used or expired; request a new one"
        case .notFound: "no such account"
        case .invalidIdToken(let refusal): "the ID token was refused: \(refusal.description)"
        case .providerNotConfigured(let provider): "sign-in with '\(provider)' is not set up on this server (its audiences are not configured)"
        case .identityProviderUnavailable(let provider): "the keys of '\(provider)' cannot be fetched; retry later"
        case .accountExistsForEmail:
            "an account with this email already exists: sign in to it (email and password) and link this identity from there (LinkIdentity)"
        case .identityInUse: "this identity is already linked to another account"
        case .providerAlreadyLinked(let provider): "the account already has a '\(provider)' identity; unlink it first"
        case .identityNotLinked: "no identity of that provider is linked to the account"
        case .lastSignInMethod: "that is the account's only way to sign in; set a password or link another identity first"
        case .reauthenticationRequired: "give the account's password (an account without one: sign in again, so the session is recent) and retry"
        case .emailNotVerified: "verify the account's email first (the link in the verification mail; RequestEmailVerification sends another)"
        case .invalidVerificationToken: "the verification token is unknown, used or expired; request a new one"
        case .guestsDisabled: "this server does not make guest accounts (guestAccounts is off)"
        case .notAGuest: "the account is not a guest: it has a way to sign in already"
        }
    }
}

/// Which check refused an ID token (InvalidIdToken's `reason`).
public enum IdTokenRefusal: String, Codable, Sendable, CaseIterable, CustomStringConvertible {
    case malformed, algorithm, unknownKey, signature, issuer, audience, authorizedParty, expired, issuedInFuture, notYetValid
    case nonceMismatch, nonceMissing, hostedDomain, subject, noEmail

    public var description: String {
        switch self {
        case .malformed: "it is not a well-formed signed JWT"
        case .algorithm: "its algorithm is not one the provider's key names (none and HMAC are never accepted)"
        case .unknownKey: "it names a signing key the provider does not publish"
        case .signature: "its signature does not verify with the provider's key"
        case .issuer: "it was not issued by the provider"
        case .audience: "it was issued to another app (its audience is not a configured client id)"
        case .authorizedParty: "it was issued for another client (azp)"
        case .expired: "it has expired; sign in with the provider again"
        case .issuedInFuture: "it is dated in the future (check the clocks)"
        case .notYetValid: "it is not valid yet (nbf)"
        case .nonceMismatch: "its nonce is not the SHA-256 of the nonce given"
        case .nonceMissing: "the nonce is missing from the token or from the call (both or neither)"
        case .hostedDomain: "its account is not in an allowed hosted domain"
        case .subject: "it has no usable subject (sub)"
        case .noEmail: "it carries no email, which a new account needs; request the email scope"
        }
    }
}
