// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// Stripe webhooks (`Stripe-Signature`, see `StripeSignature`). The account is the Checkout
/// Session's `client_reference_id` or a `userId` in the metadata (set one of them when you
/// create the session), remembered per customer for the subscription events that follow.
/// The product is matched against the catalog by price lookup key, price id, or product id.
struct StripeProvider: PaymentProvider {
    let secrets: [String]
    var name: String { "stripe" }

    func verify(headers: [String: String], body: [UInt8], now: WallTime) throws(PaymentsError) {
        try StripeSignature.verify(
            header: headers["stripe-signature"], body: body, secrets: secrets, now: now.nanosecondsSinceEpoch / 1_000_000_000)
    }

    func decode(_ body: [UInt8], catalog: PaymentsCatalog) throws(PaymentsError) -> ProviderEvent {
        let root = try parseWebhookJSON(body)
        guard let id = root.string("id"), !id.isEmpty, id.utf8.count <= 200 else { throw .malformedEvent(reason: "the event has no 'id'") }
        guard let type = root.string("type"), !type.isEmpty else { throw .malformedEvent(reason: "the event has no 'type'") }
        guard let createdAt = root.time("created", unit: 1_000_000_000) else { throw .malformedEvent(reason: "the event has no valid 'created' time") }
        guard let object = root["data"]?["object"], object.objectValue != nil else { throw .malformedEvent(reason: "the event has no 'data.object'") }

        let customer = object.string("customer")
        let metadataUser = object["metadata"]?.string("userId")
        var event = ProviderEvent(
            provider: name, id: id, type: type, time: createdAt, subject: .customer(customer, user: metadataUser), actions: [])

        switch type {
        case "checkout.session.completed":
            event.subject = .customer(customer, user: object.string("client_reference_id") ?? metadataUser)
            // A one-off payment names its product in the session's metadata; a subscription's
            // product arrives with customer.subscription.created.
            if object.string("mode") == "payment", let productID = object["metadata"]?.string("product"), let product = catalog.product(productID) {
                let expires = product.period.nanoseconds.map { createdAt + $0 }
                event.actions = [.activate(entitlement: product.entitlement, product: product.id, expiresAt: expires, willRenew: false)]
            }
        case "customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted":
            guard let product = subscriptionProduct(object, catalog) else { break }
            let status = object.string("status") ?? ""
            // Newer API versions carry the period end on the item; without one, the product's period from now.
            let periodEnd =
                object.time("current_period_end", unit: 1_000_000_000)
                ?? object["items"]?["data"]?.first?.time("current_period_end", unit: 1_000_000_000)
                ?? product.period.nanoseconds.map { createdAt + $0 }
            if type == "customer.subscription.deleted" || ["canceled", "unpaid", "incomplete_expired"].contains(status) {
                event.actions = [.expire(entitlement: product.entitlement, product: product.id)]
            } else if ["active", "trialing", "past_due"].contains(status) {
                let willRenew = object["cancel_at_period_end"] != .bool(true) && object["cancel_at"].map { $0 == .null } ?? true
                event.actions = [.activate(entitlement: product.entitlement, product: product.id, expiresAt: periodEnd, willRenew: willRenew)]
            }
        case "invoice.payment_failed":
            event.actions = [.purchaseFailed(product: nil, reason: "invoice payment failed")]
        default:
            break  // stored for audit, no effect
        }
        return event
    }

    private func subscriptionProduct(_ subscription: JSONValue, _ catalog: PaymentsCatalog) -> PaymentsCatalog.Product? {
        guard case .array(let items) = subscription["items"]?["data"] else { return nil }
        for item in items {
            guard let price = item["price"] else { continue }
            for key in [price.string("lookup_key"), price.string("id"), price.string("product")].compactMap({ $0 }) {
                if let product = catalog.product(key) { return product }
            }
        }
        return nil
    }
}

extension JSONValue {
    var first: JSONValue? {
        if case .array(let items) = self { return items.first }
        return nil
    }
}
