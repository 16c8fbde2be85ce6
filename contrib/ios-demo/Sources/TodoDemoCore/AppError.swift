// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Foundation

/// The app's one error type, as the templates have it: every error a screen shows goes
/// through `AppError(_:)`.
public enum AppError: Error, Equatable, Sendable {
    /// The action needs a subscription: show the paywall for this entitlement.
    case paywall(entitlement: String)
    /// The session is gone: back to sign-in.
    case signInRequired
    /// Anything else, in words for the user.
    case message(String, suggestion: String?)

    public init(_ error: any Error) {
        switch error {
        case let error as AppError: self = error
        case PaymentsError.paymentRequired(let entitlement, _, _): self = .paywall(entitlement: entitlement)
        case AuthError.unauthenticated, AuthError.sessionExpired, AppdClientError.notSignedIn: self = .signInRequired
        case let error as any LocalizedError: self = .message(error.errorDescription ?? "Something went wrong.", suggestion: error.recoverySuggestion)
        default: self = .message("Something went wrong.", suggestion: nil)
        }
    }
}
