import Bus

/// The typed errors of `io.appd.Auth`, each declared in its IDL.
public struct AuthError: WireError, Equatable {
    public enum Kind: String, Sendable {
        case invalidCredentials = "InvalidCredentials"
        case validationFailed = "ValidationFailed"
        case unauthenticated = "Unauthenticated"
        case sessionExpired = "SessionExpired"
        case onboardingRequired = "OnboardingRequired"
        case tooManyAttempts = "TooManyAttempts"
        case accountDisabled = "AccountDisabled"
        case busy = "Busy"
        case invalidResetToken = "InvalidResetToken"
        case notFound = "NotFound"
        case invalidIdToken = "InvalidIdToken"
        case providerNotConfigured = "ProviderNotConfigured"
        case identityProviderUnavailable = "IdentityProviderUnavailable"
        case accountExistsForEmail = "AccountExistsForEmail"
        case identityInUse = "IdentityInUse"
        case providerAlreadyLinked = "ProviderAlreadyLinked"
        case identityNotLinked = "IdentityNotLinked"
        case lastSignInMethod = "LastSignInMethod"
        case reauthenticationRequired = "ReauthenticationRequired"
        case emailNotVerified = "EmailNotVerified"
        case invalidVerificationToken = "InvalidVerificationToken"
        case guestsDisabled = "GuestsDisabled"
        case notAGuest = "NotAGuest"
    }

    public let kind: Kind
    public var field: String?
    public var reason: String?
    public var retryAfterSeconds: Int?
    /// InvalidIdToken: which check refused the token.
    public var tokenRefusal: IdTokenRefusal?
    /// The identity provider the error is about.
    public var provider: String?

    public static let invalidCredentials = AuthError(kind: .invalidCredentials)
    public static let unauthenticated = AuthError(kind: .unauthenticated)
    public static let sessionExpired = AuthError(kind: .sessionExpired)
    public static let onboardingRequired = AuthError(kind: .onboardingRequired)
    public static let accountDisabled = AuthError(kind: .accountDisabled)
    public static let busy = AuthError(kind: .busy)
    public static let invalidResetToken = AuthError(kind: .invalidResetToken)
    public static let notFound = AuthError(kind: .notFound)

    public static let accountExistsForEmail = AuthError(kind: .accountExistsForEmail)
    public static let identityInUse = AuthError(kind: .identityInUse)
    public static let identityNotLinked = AuthError(kind: .identityNotLinked)
    public static let lastSignInMethod = AuthError(kind: .lastSignInMethod)
    public static let reauthenticationRequired = AuthError(kind: .reauthenticationRequired)
    public static let emailNotVerified = AuthError(kind: .emailNotVerified)
    public static let invalidVerificationToken = AuthError(kind: .invalidVerificationToken)
    public static let guestsDisabled = AuthError(kind: .guestsDisabled)
    public static let notAGuest = AuthError(kind: .notAGuest)

    public static func invalidIdToken(_ refusal: IdTokenRefusal) -> AuthError { AuthError(kind: .invalidIdToken, tokenRefusal: refusal) }
    public static func providerNotConfigured(_ provider: String) -> AuthError { AuthError(kind: .providerNotConfigured, provider: provider) }
    static func identityProviderUnavailable(_ provider: IdentityProvider) -> AuthError {
        AuthError(kind: .identityProviderUnavailable, provider: provider.rawValue)
    }
    public static func providerAlreadyLinked(_ provider: String) -> AuthError { AuthError(kind: .providerAlreadyLinked, provider: provider) }

    public static func validation(_ field: String, _ reason: String) -> AuthError {
        AuthError(kind: .validationFailed, field: field, reason: reason)
    }

    public static func tooManyAttempts(retryAfter seconds: Int) -> AuthError {
        AuthError(kind: .tooManyAttempts, retryAfterSeconds: seconds)
    }

    public var wireName: String { "io.appd.Auth.\(kind.rawValue)" }

    public var wireParameters: [String: JSONValue] {
        switch kind {
        case .validationFailed: ["field": .string(field ?? ""), "reason": .string(reason ?? "")]
        case .tooManyAttempts: ["retryAfterSeconds": .int(Int64(retryAfterSeconds ?? 0))]
        case .invalidIdToken: ["reason": .string(tokenRefusal?.rawValue ?? "malformed")]
        case .providerNotConfigured, .identityProviderUnavailable, .providerAlreadyLinked: ["provider": .string(provider ?? "")]
        default: [:]
        }
    }

    public var description: String {
        switch kind {
        case .invalidCredentials: "wrong email or password"
        case .validationFailed: "\(field ?? "input"): \(reason ?? "invalid")"
        case .unauthenticated: "not signed in; run 'appctl login'"
        case .sessionExpired: "the session expired; sign in again or refresh it"
        case .onboardingRequired: "finish onboarding first ('appctl onboard')"
        case .tooManyAttempts: "too many failed sign-ins; retry in \(retryAfterSeconds ?? 0) s"
        case .accountDisabled: "this account is disabled; ask an administrator"
        case .busy: "too many sign-ins in progress; retry in a moment"
        case .invalidResetToken: "the reset token is unknown, used or expired; request a new one"
        case .notFound: "no such account"
        case .invalidIdToken: "the ID token was refused: \(tokenRefusal?.description ?? "malformed")"
        case .providerNotConfigured: "sign-in with '\(provider ?? "")' is not set up on this server (its audiences are not configured)"
        case .identityProviderUnavailable: "the keys of '\(provider ?? "")' cannot be fetched; retry later"
        case .accountExistsForEmail:
            "an account with this email already exists: sign in to it (email and password) and link this identity from there (LinkIdentity)"
        case .identityInUse: "this identity is already linked to another account"
        case .providerAlreadyLinked: "the account already has a '\(provider ?? "")' identity; unlink it first"
        case .identityNotLinked: "no identity of that provider is linked to the account"
        case .lastSignInMethod: "that is the account's only way to sign in; set a password or link another identity first"
        case .reauthenticationRequired: "give the password, or sign in again (the session must be recent) and retry"
        case .emailNotVerified: "verify the account's email first (the link in the verification mail; RequestEmailVerification sends another)"
        case .invalidVerificationToken: "the verification token is unknown, used or expired; request a new one"
        case .guestsDisabled: "this server does not make guest accounts (guestAccounts is off)"
        case .notAGuest: "the account is not a guest: it has a way to sign in already"
        }
    }
}

/// Which check refused an ID token (InvalidIdToken's `reason`).
public enum IdTokenRefusal: String, Sendable, CaseIterable {
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
