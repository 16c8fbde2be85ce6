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
    }

    public let kind: Kind
    public var field: String?
    public var reason: String?
    public var retryAfterSeconds: Int?

    public static let invalidCredentials = AuthError(kind: .invalidCredentials)
    public static let unauthenticated = AuthError(kind: .unauthenticated)
    public static let sessionExpired = AuthError(kind: .sessionExpired)
    public static let onboardingRequired = AuthError(kind: .onboardingRequired)
    public static let accountDisabled = AuthError(kind: .accountDisabled)
    public static let busy = AuthError(kind: .busy)
    public static let invalidResetToken = AuthError(kind: .invalidResetToken)
    public static let notFound = AuthError(kind: .notFound)

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
        }
    }
}
