// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// RevenueCat webhooks: `{"api_version": "1.0", "event": {...}}`, authenticated by the
/// `Authorization` header value configured in RevenueCat's dashboard (compared in constant
/// time; a `Bearer ` prefix on either side is allowed).
struct RevenueCatProvider: PaymentProvider {
    let secret: String
    var name: String { "revenuecat" }

    func verify(headers: [String: String], body: [UInt8], now: WallTime) throws(PaymentsError) {
        guard let given = headers["authorization"] else { throw .invalidSignature(reason: "no Authorization header") }
        func bare(_ s: String) -> [UInt8] {
            let t = s.trimmingWhitespace()
            return Array((t.hasPrefix("Bearer ") ? String(t.dropFirst(7)) : t).utf8)
        }
        let expected = Digest.sha256(bare(secret))
        // Hash both sides first so the comparison takes the same time whatever the lengths.
        guard Digest.constantTimeEqual(expected, Digest.sha256(bare(given))) else {
            throw .invalidSignature(reason: "the Authorization header does not match the configured secret")
        }
    }

    func decode(_ body: [UInt8], catalog: PaymentsCatalog) throws(PaymentsError) -> ProviderEvent {
        let root = try parseWebhookJSON(body)
        // A subscriber snapshot "Restore purchases" stored (RevenueCat's REST answer).
        if root["subscriber"] != nil { return try RevenueCatSubscriber.decode(root) }
        guard let event = root["event"], event.objectValue != nil else { throw .malformedEvent(reason: "no 'event' object") }
        guard let id = event.string("id"), !id.isEmpty, id.utf8.count <= 200 else { throw .malformedEvent(reason: "the event has no 'id'") }
        guard let type = event.string("type"), !type.isEmpty else { throw .malformedEvent(reason: "the event has no 'type'") }
        guard let time = event.time("event_timestamp_ms", unit: 1_000_000) else { throw .malformedEvent(reason: "the event has no valid 'event_timestamp_ms'") }
        let product = event.string("new_product_id") ?? event.string("product_id")
        var entitlements = event.strings("entitlement_ids")
        if entitlements.isEmpty, let id = event.string("entitlement_id") { entitlements = [id] }
        if entitlements.isEmpty, let product, let known = catalog.product(product) { entitlements = [known.entitlement] }
        let expiresAt = event.time("expiration_at_ms", unit: 1_000_000)
        let lifetime = product.flatMap { catalog.product($0) }?.period == .lifetime

        var actions: [ProviderEvent.Action] = []
        var subject = ProviderEvent.Subject.none
        if let user = event.string("app_user_id") ?? event.string("original_app_user_id"), !user.isEmpty { subject = .appUser(user) }
        switch type {
        case "INITIAL_PURCHASE", "RENEWAL", "PRODUCT_CHANGE", "UNCANCELLATION", "NON_RENEWING_PURCHASE":
            let nonRenewing = type == "NON_RENEWING_PURCHASE"
            actions = entitlements.map {
                .activate(entitlement: $0, product: product, expiresAt: lifetime ? nil : expiresAt, willRenew: !nonRenewing && !lifetime)
            }
        case "CANCELLATION":
            // Only renewal stops: access lasts until EXPIRATION.
            actions = entitlements.map { .cancelRenewal(entitlement: $0, product: product) }
        case "EXPIRATION":
            actions = entitlements.map { .expire(entitlement: $0, product: product) }
        case "BILLING_ISSUE":
            actions = [.purchaseFailed(product: product, reason: "billing issue")]
        case "SUBSCRIPTION_PAUSED":
            // Never revoke on a pause: access lasts until the period ends (then EXPIRATION).
            actions = entitlements.map { .cancelRenewal(entitlement: $0, product: product) }
        case "TRANSFER":
            let from = event.strings("transferred_from"), to = event.strings("transferred_to")
            guard !to.isEmpty else { throw .malformedEvent(reason: "a TRANSFER without 'transferred_to'") }
            subject = .appUser(to[0])
            actions = [.transfer(from: from, to: to, entitlements: entitlements, product: product, expiresAt: expiresAt)]
        default:
            // TEST, SUBSCRIBER_ALIAS, SUBSCRIPTION_EXTENDED…: stored for audit, no effect.
            if type == "SUBSCRIPTION_EXTENDED", let expiresAt {
                actions = entitlements.map { .activate(entitlement: $0, product: product, expiresAt: expiresAt, willRenew: true) }
            }
        }
        return ProviderEvent(provider: name, id: id, type: type, time: time, subject: subject, actions: actions)
    }
}
