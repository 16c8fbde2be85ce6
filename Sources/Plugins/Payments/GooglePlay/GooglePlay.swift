// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// Google Play Billing without a middleman: the push verifier for real-time developer
/// notifications and the Play Developer API, for one app (`packageName`).
struct GooglePlay: Sendable {
    let packageName: String
    let api: GooglePlayAPI
    let push: GooglePushVerifier

    /// The purchase as Google reports it now, as a record to store (`id` names the event).
    func record(
        id: String, type: String, token: String, productID: String, subscription: Bool, voided: Bool = false, now: Int64
    ) async throws(PaymentsError)
        -> GooglePlayRecord
    {
        let purchase = subscription ? try await api.subscription(token: token) : try await api.product(productID, token: token)
        var record = GooglePlayRecord(
            id: id, type: type, time: now, purchaseToken: token, productID: productID, subscription: subscription, purchase: purchase, voided: voided)
        // A subscription's product is what Google says it is now (an upgrade changes it).
        if subscription, case .array(let items)? = purchase?["lineItems"], let product = items.first?.string("productId") {
            record.productID = product
        }
        return record
    }

    /// Whether the catalog sells `productID` as a one-time product (a lifetime entitlement) or
    /// as a subscription: Google keeps the two apart.
    static func isSubscription(_ productID: String, _ catalog: PaymentsCatalog) -> Bool {
        catalog.product(productID)?.period != .lifetime
    }
}
