// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The typed errors of `io.appd.Payments`.
public enum PaymentsError: InterfaceError {
    public static let interface = "io.appd.Payments"

    /// The method needs `entitlement`; without it `remaining` free uses are left until
    /// `resetsAt` (RFC 3339; nil when the meter does not reset, or there is no free quota).
    case paymentRequired(entitlement: String, remaining: Int, resetsAt: String?)
    case invalidSignature(reason: String)
    case unknownProvider(provider: String)
    case malformedEvent(reason: String)
    case unknownAccount(email: String)
    case unknownEntitlement(entitlement: String)
    case validationFailed(field: String, reason: String)
    case foreignTransaction(reason: String)
    case providerUnavailable(provider: String, reason: String)

    public static func validation(_ field: String, _ reason: String) -> PaymentsError { .validationFailed(field: field, reason: reason) }

    public var description: String {
        switch self {
        case .paymentRequired(let entitlement, _, let resetsAt):
            "this needs '\(entitlement)': the free quota is used up\(resetsAt.map { " until \($0)" } ?? ""); buy or restore it, or ask an admin to grant it"
        case .invalidSignature(let reason): "the webhook's signature does not verify (\(reason)); check the provider's secret in appd's config"
        case .unknownProvider(provider: let provider):
            "'\(provider)' is not a configured payment provider; use revenuecat, stripe or appstore and set its secret or certificates (README, Payments)"
        case .malformedEvent(let reason): "the webhook body is not an event appd understands: \(reason)"
        case .unknownAccount(let email): "no account has the email '\(email)'"
        case .unknownEntitlement(entitlement: let name): "'\(name)' is not a configured entitlement; see 'appctl payments products'"
        case .validationFailed(let field, let reason): "\(field): \(reason)"
        case .foreignTransaction(let reason): "the purchase belongs to another account: \(reason)"
        case .providerUnavailable(let provider, let reason): "\(provider) could not be asked (\(reason)); nothing changed, try again"
        }
    }
}
