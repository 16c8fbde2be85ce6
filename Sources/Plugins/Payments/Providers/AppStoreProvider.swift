// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// App Store Server Notifications v2 at `/webhooks/appstore`: `{"signedPayload": "<JWS>"}`,
/// the payload and the transaction and renewal info inside it each signed by the App Store
/// (`AppStoreVerifier`). Applied once per `notificationUUID`, in the order of their
/// `signedDate` (the stored-event table both do for every provider).
struct AppStoreProvider: PaymentProvider {
    /// nil: only decodes what was verified when it arrived (Restore's recomputation).
    let verifier: AppStoreVerifier?
    var name: String { "appstore" }

    func verify(headers: [String: String], body: [UInt8], now: WallTime) throws(PaymentsError) {
        guard let verifier else { throw .unknownProvider(provider: name) }
        _ = try AppStoreNotification(body) { (text) throws(PaymentsError) in try verifier.verify(text, now: now) }
            .checked(verifier)
    }

    /// Runs after `verify` (so the signatures are not checked again). A stored body is a
    /// notification (JSON) or a transaction an app submitted (its JWS).
    func decode(_ body: [UInt8], catalog: PaymentsCatalog) throws(PaymentsError) -> ProviderEvent {
        guard body.first == UInt8(ascii: "{") else {
            let transaction = try AppStoreTransaction(try AppStoreNotification.unverifiedClaims(String(decoding: body, as: UTF8.self)))
            return try transaction.submitted(catalog)
        }
        return try AppStoreNotification(body) { (text) throws(PaymentsError) in try AppStoreNotification.unverifiedClaims(text) }.event(catalog)
    }
}

/// One decoded notification (`responseBodyV2DecodedPayload`) and the signed infos it carries.
struct AppStoreNotification {
    var id: String
    var type: String
    var subtype: String?
    var signedDate: Int64
    /// `data`, or for a summary notification `summary` (what names the app and environment).
    var app: JSONValue?
    var transaction: AppStoreTransaction?
    var renewal: JSONValue?

    /// Parses the body, reading each signed part through `claims` (which verifies, or not).
    init(_ body: [UInt8], claims: (String) throws(PaymentsError) -> JSONValue) throws(PaymentsError) {
        let root = try parseWebhookJSON(body)
        guard let signed = root.string("signedPayload") else { throw .malformedEvent(reason: "no 'signedPayload'") }
        let payload = try claims(signed)
        guard let id = payload.string("notificationUUID"), !id.isEmpty, id.utf8.count <= 200 else {
            throw .malformedEvent(reason: "the notification has no 'notificationUUID'")
        }
        guard let type = payload.string("notificationType"), !type.isEmpty, type.utf8.count <= 100 else {
            throw .malformedEvent(reason: "the notification has no 'notificationType'")
        }
        guard let signedDate = payload.time("signedDate", unit: 1_000_000) else { throw .malformedEvent(reason: "the notification has no valid 'signedDate'") }
        self.id = id
        self.type = type
        self.subtype = payload.string("subtype")
        self.signedDate = signedDate
        app = payload["data"] ?? payload["summary"]
        if let text = payload["data"]?.string("signedTransactionInfo") { transaction = try AppStoreTransaction(try claims(text)) }
        if let text = payload["data"]?.string("signedRenewalInfo") { renewal = try claims(text) }
    }

    /// Checks that it is for this app and environment (the notification's `data` or `summary`).
    func checked(_ verifier: AppStoreVerifier) throws(PaymentsError) -> AppStoreNotification {
        if let app {
            try verifier.checkApp(app, what: "notification")
        } else if type != "TEST" {
            throw .malformedEvent(reason: "a \(type) notification without 'data' or 'summary'")
        }
        return self
    }

    /// The claims of a JWS whose signature was checked before (`AppStoreProvider.verify`).
    static func unverifiedClaims(_ text: String) throws(PaymentsError) -> JSONValue {
        do {
            let jws = try CompactJWS(text, maxBytes: AppStoreVerifier.maxBytes)
            return .object(try jws.claims())
        } catch {
            throw .malformedEvent(reason: "a signed part is not a JWS (\(error))")
        }
    }

    /// What the notification does, as a provider event about the purchase's account.
    func event(_ catalog: PaymentsCatalog) throws(PaymentsError) -> ProviderEvent {
        let fullType = subtype.map { "\(type)/\($0)" } ?? type
        guard let transaction else {
            // A test or a summary: stored for the audit trail, about no account.
            return ProviderEvent(provider: "appstore", id: id, type: fullType, time: signedDate, subject: .none, actions: [])
        }
        let willRenew = renewal?.int("autoRenewStatus").map { $0 == 1 } ?? true
        let product = catalog.product(transaction.productID)
        var actions: [ProviderEvent.Action] = []
        if let product {
            let (entitlement, id) = (product.entitlement, transaction.productID)
            switch type {
            case "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED", "RENEWAL_EXTENDED", "REFUND_REVERSED", "ONE_TIME_CHARGE", "DID_CHANGE_RENEWAL_PREF":
                actions = (try? transaction.actions(catalog, willRenew: willRenew)) ?? []
            case "DID_CHANGE_RENEWAL_STATUS":
                actions =
                    subtype == "AUTO_RENEW_DISABLED"
                    ? [.cancelRenewal(entitlement: entitlement, product: id)] : ((try? transaction.actions(catalog, willRenew: true)) ?? [])
            case "EXPIRED", "GRACE_PERIOD_EXPIRED":
                actions = [.expire(entitlement: entitlement, product: id)]
            case "REFUND", "REVOKE":
                actions = [.revoke(entitlement: entitlement, product: id)]
            case "DID_FAIL_TO_RENEW":
                if subtype == "GRACE_PERIOD", let grace = renewal?.time("gracePeriodExpiresDate", unit: 1_000_000) {
                    // Billing retry with a grace period: access lasts until it ends.
                    actions = [.activate(entitlement: entitlement, product: id, expiresAt: grace, willRenew: true)]
                }
                actions.append(.purchaseFailed(product: id, reason: "the App Store could not renew (\(fullType))"))
            default:
                // PRICE_INCREASE, CONSUMPTION_REQUEST, REFUND_DECLINED, TEST, …: audit only.
                break
            }
        }
        return ProviderEvent(
            provider: "appstore", id: id, type: fullType, time: signedDate,
            subject: .storePurchase(id: transaction.originalTransactionID, accountToken: transaction.appAccountToken), actions: actions)
    }
}
