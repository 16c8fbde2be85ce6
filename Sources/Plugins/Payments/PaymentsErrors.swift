import Bus

/// The typed errors of `io.appd.Payments`, each declared in its IDL.
public struct PaymentsError: WireError, Equatable {
    public enum Kind: String, Sendable {
        case paymentRequired = "PaymentRequired"
        case invalidSignature = "InvalidSignature"
        case unknownProvider = "UnknownProvider"
        case malformedEvent = "MalformedEvent"
        case unknownAccount = "UnknownAccount"
        case unknownEntitlement = "UnknownEntitlement"
        case validationFailed = "ValidationFailed"
        case providerUnavailable = "ProviderUnavailable"
    }

    public let kind: Kind
    public var entitlement: String?
    public var remaining: Int?
    public var resetsAt: String?
    /// Why (signature, event), or the provider/email/field concerned.
    public var detail: String?
    public var reason: String?

    public static func paymentRequired(_ entitlement: String, remaining: Int, resetsAt: String?) -> PaymentsError {
        PaymentsError(kind: .paymentRequired, entitlement: entitlement, remaining: remaining, resetsAt: resetsAt)
    }
    public static func invalidSignature(_ reason: String) -> PaymentsError { PaymentsError(kind: .invalidSignature, reason: reason) }
    public static func unknownProvider(_ provider: String) -> PaymentsError { PaymentsError(kind: .unknownProvider, detail: provider) }
    public static func malformed(_ reason: String) -> PaymentsError { PaymentsError(kind: .malformedEvent, reason: reason) }
    public static func unknownAccount(_ email: String) -> PaymentsError { PaymentsError(kind: .unknownAccount, detail: email) }
    public static func unknownEntitlement(_ name: String) -> PaymentsError { PaymentsError(kind: .unknownEntitlement, entitlement: name) }
    public static func providerUnavailable(_ provider: String, _ reason: String) -> PaymentsError {
        PaymentsError(kind: .providerUnavailable, detail: provider, reason: reason)
    }
    public static func validation(_ field: String, _ reason: String) -> PaymentsError {
        PaymentsError(kind: .validationFailed, detail: field, reason: reason)
    }

    public var wireName: String { "io.appd.Payments.\(kind.rawValue)" }

    public var wireParameters: [String: JSONValue] {
        switch kind {
        case .paymentRequired:
            ["entitlement": .string(entitlement ?? ""), "remaining": .int(Int64(remaining ?? 0)), "resetsAt": resetsAt.map(JSONValue.string) ?? .null]
        case .invalidSignature, .malformedEvent: ["reason": .string(reason ?? "")]
        case .unknownProvider: ["provider": .string(detail ?? "")]
        case .unknownAccount: ["email": .string(detail ?? "")]
        case .unknownEntitlement: ["entitlement": .string(entitlement ?? "")]
        case .validationFailed: ["field": .string(detail ?? ""), "reason": .string(reason ?? "")]
        case .providerUnavailable: ["provider": .string(detail ?? ""), "reason": .string(reason ?? "")]
        }
    }

    public var description: String {
        switch kind {
        case .paymentRequired:
            "this needs '\(entitlement ?? "")': the free quota is used up\(resetsAt.map { " until \($0)" } ?? ""); buy or restore it, or ask an admin to grant it"
        case .invalidSignature: "the webhook's signature does not verify (\(reason ?? "")); check the provider's secret in appd's config"
        case .unknownProvider: "'\(detail ?? "")' is not a configured payment provider; use revenuecat or stripe and set its webhook secret"
        case .malformedEvent: "the webhook body is not an event appd understands: \(reason ?? "")"
        case .unknownAccount: "no account has the email '\(detail ?? "")'"
        case .unknownEntitlement: "'\(entitlement ?? "")' is not a configured entitlement; see 'appctl payments products'"
        case .validationFailed: "\(detail ?? "input"): \(reason ?? "invalid")"
        case .providerUnavailable: "\(detail ?? "the provider") could not be asked (\(reason ?? "")); nothing changed, try again"
        }
    }
}
