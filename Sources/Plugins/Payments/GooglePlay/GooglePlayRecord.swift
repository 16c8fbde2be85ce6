// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// One Google Play event as appd stores it: what happened (a real-time developer notification,
/// or an app's submission) and the purchase as the Play Developer API reported it at that
/// moment. Google's notifications carry no state, only "look again"; the state fetched is what
/// moves the entitlement, and it is kept so that Restore recomputes without asking Google.
/// `time` is when appd fetched it: later fetches hold newer state.
struct GooglePlayRecord: Sendable, Equatable {
    var id: String
    var type: String
    var time: Int64
    var purchaseToken: String
    var productID: String
    var subscription: Bool
    /// `SubscriptionPurchaseV2` or `ProductPurchase`; nil when Google no longer knows the token.
    var purchase: JSONValue?
    /// A voided purchase notification (a refund or a chargeback).
    var voided: Bool = false

    var json: String {
        var object: [String: JSONValue] = [
            "id": .string(id), "type": .string(type), "time": .int(time), "purchaseToken": .string(purchaseToken), "productId": .string(productID),
            "subscription": .bool(subscription), "voided": .bool(voided),
        ]
        if let purchase { object["purchase"] = purchase }
        return String(decoding: JSONWriter.bytes(.object(object)), as: UTF8.self)
    }

    init(id: String, type: String, time: Int64, purchaseToken: String, productID: String, subscription: Bool, purchase: JSONValue?, voided: Bool = false) {
        self.id = id
        self.type = type
        self.time = time
        self.purchaseToken = purchaseToken
        self.productID = productID
        self.subscription = subscription
        self.purchase = purchase
        self.voided = voided
    }

    init(json bytes: [UInt8]) throws(PaymentsError) {
        let value = try parseWebhookJSON(bytes)
        guard let id = value.string("id"), let type = value.string("type"), let time = value.int("time"), let token = value.string("purchaseToken"),
            let product = value.string("productId"), case .bool(let subscription)? = value["subscription"]
        else { throw .malformedEvent(reason: "not a stored Google Play event") }
        self.init(id: id, type: type, time: time, purchaseToken: token, productID: product, subscription: subscription, purchase: value["purchase"])
        voided = value["voided"] == .bool(true)
    }

    /// The account token the app set on the purchase (`obfuscatedAccountId`), if any.
    var accountToken: String? {
        let raw = purchase?["externalAccountIdentifiers"]?.string("obfuscatedExternalAccountId") ?? purchase?.string("obfuscatedExternalAccountId")
        return raw.flatMap { AppStoreAccountTokens.canonical($0) }
    }

    /// Whether Google still waits for appd to acknowledge the purchase.
    var needsAcknowledgement: Bool {
        guard let purchase else { return false }
        if subscription { return purchase.string("acknowledgementState") == "ACKNOWLEDGEMENT_STATE_PENDING" }
        return purchase.int("acknowledgementState") == 0 && purchase.int("purchaseState") == 0
    }

    func event(_ catalog: PaymentsCatalog) -> ProviderEvent {
        ProviderEvent(
            provider: "googleplay", id: id, type: type, time: time, subject: .storePurchase(id: purchaseToken, accountToken: accountToken),
            actions: actions(catalog))
    }

    /// What the purchase, as Google reported it, does to its product's entitlement.
    func actions(_ catalog: PaymentsCatalog) -> [ProviderEvent.Action] {
        guard let product = catalog.product(productID) else { return [] }
        let (entitlement, id) = (product.entitlement, productID)
        if voided { return [.revoke(entitlement: entitlement, product: id)] }
        guard let purchase else { return [] }
        guard subscription else {
            switch purchase.int("purchaseState") {
            case 0:
                let expires = product.period.nanoseconds.map { (purchase.time("purchaseTimeMillis", unit: 1_000_000) ?? time) + $0 }
                return [.activate(entitlement: entitlement, product: id, expiresAt: expires, willRenew: false)]
            case 1: return [.revoke(entitlement: entitlement, product: id)]
            default: return []  // pending
            }
        }
        guard case .array(let items)? = purchase["lineItems"] else { return [] }
        let item = items.first { $0.string("productId") == productID } ?? items.first
        let expires = item?.string("expiryTime").flatMap { RFC3339.parse($0)?.nanosecondsSinceEpoch }
        let renews = item?["autoRenewingPlan"]?["autoRenewEnabled"] == .bool(true)
        switch purchase.string("subscriptionState") {
        case "SUBSCRIPTION_STATE_ACTIVE", "SUBSCRIPTION_STATE_IN_GRACE_PERIOD":
            return [.activate(entitlement: entitlement, product: id, expiresAt: expires, willRenew: renews)]
        case "SUBSCRIPTION_STATE_CANCELED":
            // Renewal stopped; access lasts until the paid period ends.
            if let expires, expires > time { return [.activate(entitlement: entitlement, product: id, expiresAt: expires, willRenew: false)] }
            return [.expire(entitlement: entitlement, product: id)]
        case "SUBSCRIPTION_STATE_EXPIRED", "SUBSCRIPTION_STATE_ON_HOLD", "SUBSCRIPTION_STATE_PAUSED":
            return [.expire(entitlement: entitlement, product: id)]
        default:
            return []  // pending, or a state Google adds later
        }
    }

    /// The event id of a state asked for rather than notified (a submission, a restore).
    var stateID: String { Self.tag(purchaseToken) + ":state:\(time / 1_000_000)" }

    /// A short, stable name for a purchase token in event ids (tokens run to hundreds of characters).
    static func tag(_ token: String) -> String {
        Digest.hex(Array(Digest.sha256(Array(token.utf8)).prefix(12)))
    }
}

/// Decodes stored Google Play records (Restore recomputes from them without asking Google);
/// live notifications go through `PaymentsService.ingestGooglePlay`, never through `verify`.
struct GooglePlayStored: PaymentProvider {
    var name: String { "googleplay" }

    func verify(headers: [String: String], body: [UInt8], now: WallTime) throws(PaymentsError) {
        throw .unknownProvider(provider: name)
    }

    func decode(_ body: [UInt8], catalog: PaymentsCatalog) throws(PaymentsError) -> ProviderEvent {
        try GooglePlayRecord(json: body).event(catalog)
    }
}
