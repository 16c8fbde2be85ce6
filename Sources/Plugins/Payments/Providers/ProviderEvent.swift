// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// One provider webhook event, verified and reduced to what it does to entitlements.
struct ProviderEvent: Sendable, Equatable {
    /// How the event names the account.
    enum Subject: Sendable, Equatable {
        /// RevenueCat's `app_user_id`: appd's user id (or the account's email).
        case appUser(String)
        /// A Stripe customer, with the user id the checkout or subscription metadata carried, if any.
        case customer(String?, user: String?)
        /// A store purchase — the App Store's original transaction id (renewals keep it), Google
        /// Play's purchase token — with the account token the app set (StoreKit's
        /// `appAccountToken`, Play's `obfuscatedAccountId`), which names the account, if any.
        case storePurchase(id: String, accountToken: String?)
        /// Not about one account (informational events).
        case none
    }

    enum Action: Sendable, Equatable {
        /// Active until `expiresAt` (nil: for good): a purchase, renewal, product change or uncancellation.
        case activate(entitlement: String, product: String?, expiresAt: Int64?, willRenew: Bool)
        /// The subscription will not renew; it stays active until it expires.
        case cancelRenewal(entitlement: String, product: String?)
        /// Access ends now.
        case expire(entitlement: String, product: String?)
        /// Access ends now because the purchase was refunded or revoked (the audit says `revoked`).
        case revoke(entitlement: String, product: String?)
        /// A payment failed (a billing issue); access is unchanged for now.
        case purchaseFailed(product: String?, reason: String)
        /// RevenueCat TRANSFER: the entitlements move from some app users to others.
        case transfer(from: [String], to: [String], entitlements: [String], product: String?, expiresAt: Int64?)
    }

    var provider: String
    var id: String
    var type: String
    /// The event's own time (ns since the epoch): later state wins, late old events lose.
    var time: Int64
    var subject: Subject
    var actions: [Action]
}

extension ProviderEvent.Subject {
    /// The provider's own id of the buyer (`payments_customers`): a Stripe customer, an App
    /// Store purchase's original transaction.
    var customerID: String? {
        switch self {
        case .customer(let id, _): id
        case .storePurchase(let original, _): original
        case .appUser, .none: nil
        }
    }
}

/// What a provider adapter does: checks a delivery's authenticity, then decodes it.
protocol PaymentProvider: Sendable {
    var name: String { get }
    /// Throws `InvalidSignature` unless the delivery is authentic. `headers` keys are lower case.
    func verify(headers: [String: String], body: [UInt8], now: WallTime) throws(PaymentsError)
    /// Throws `MalformedEvent` for a body that is not one of its events.
    func decode(_ body: [UInt8], catalog: PaymentsCatalog) throws(PaymentsError) -> ProviderEvent
}

extension JSONValue {
    /// An integer member (JSON numbers that are whole).
    func int(_ key: String) -> Int64? {
        switch self[key] {
        case .int(let i): i
        case .double(let d) where d.rounded() == d && abs(d) < 9e18: Int64(d)
        default: nil
        }
    }

    func string(_ key: String) -> String? { self[key]?.stringValue }

    /// A time member in `unit` nanoseconds (1_000_000_000 for Unix seconds, 1_000_000 for
    /// milliseconds) as nanoseconds since the epoch; nil when missing, not positive, or past
    /// the year 2200 (which would not fit, and is no real event time).
    func time(_ key: String, unit: Int64) -> Int64? {
        guard let value = int(key), value > 0, value <= 7_258_118_400_000_000_000 / unit else { return nil }
        return value * unit
    }

    func strings(_ key: String) -> [String] {
        guard case .array(let items) = self[key] else { return [] }
        return items.compactMap(\.stringValue)
    }
}

/// Parses a webhook body with appd's own JSON parser (depth-limited).
func parseWebhookJSON(_ body: [UInt8]) throws(PaymentsError) -> JSONValue {
    do {
        let value = try JSONParser.parse(body, maxDepth: 64)
        guard value.objectValue != nil else { throw PaymentsError.malformedEvent(reason: "the body is not a JSON object") }
        return value
    } catch let error as PaymentsError {
        throw error
    } catch {
        throw .malformedEvent(reason: "the body is not JSON (\(error))")
    }
}
