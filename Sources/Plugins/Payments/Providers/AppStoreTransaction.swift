// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// A StoreKit 2 transaction as the App Store signs it (`JWSTransactionDecodedPayload`), reduced
/// to what moves an entitlement. Times are nanoseconds since the epoch (Apple signs milliseconds).
struct AppStoreTransaction: Sendable, Equatable {
    var transactionID: String
    var originalTransactionID: String
    var productID: String
    /// `Auto-Renewable Subscription`, `Non-Consumable`, `Consumable` or `Non-Renewing Subscription`.
    var type: String
    var purchaseDate: Int64
    var expiresDate: Int64?
    /// When the App Store refunded or revoked it (nil: it stands).
    var revocationDate: Int64?
    /// The app's `appAccountToken` for the buyer (a UUID, lower case), when the app set one.
    var appAccountToken: String?
    var signedDate: Int64

    init(_ claims: JSONValue) throws(PaymentsError) {
        func text(_ key: String) throws(PaymentsError) -> String {
            guard let value = claims.string(key), !value.isEmpty, value.utf8.count <= 200 else {
                throw .malformedEvent(reason: "the transaction has no '\(key)'")
            }
            return value
        }
        transactionID = try text("transactionId")
        originalTransactionID = try text("originalTransactionId")
        productID = try text("productId")
        type = try text("type")
        guard let purchased = claims.time("purchaseDate", unit: 1_000_000) else { throw .malformedEvent(reason: "the transaction has no valid 'purchaseDate'") }
        guard let signed = claims.time("signedDate", unit: 1_000_000) else { throw .malformedEvent(reason: "the transaction has no valid 'signedDate'") }
        purchaseDate = purchased
        signedDate = signed
        expiresDate = claims.time("expiresDate", unit: 1_000_000)
        revocationDate = claims.time("revocationDate", unit: 1_000_000)
        if let token = claims.string("appAccountToken"), !token.isEmpty {
            guard let canonical = AppStoreAccountTokens.canonical(token) else { throw .malformedEvent(reason: "the transaction's appAccountToken is not a UUID") }
            appAccountToken = canonical
        }
        if type == "Auto-Renewable Subscription", expiresDate == nil {
            throw .malformedEvent(reason: "a subscription transaction without 'expiresDate'")
        }
    }

    /// The transaction as an app submitted it (`SubmitAppStoreTransaction`): one event per
    /// signing, so the same signed transaction again is a duplicate and a later signing of it
    /// (refunded, renewed) is applied in the order of the signatures.
    func submitted(_ catalog: PaymentsCatalog) throws(PaymentsError) -> ProviderEvent {
        ProviderEvent(
            provider: "appstore", id: "transaction:\(transactionID):\(signedDate / 1_000_000)", type: "TRANSACTION", time: signedDate,
            subject: .storePurchase(id: originalTransactionID, accountToken: appAccountToken), actions: try actions(catalog))
    }

    /// What the transaction, as signed, does to the entitlement its product grants: a revoked
    /// one (refund, Family Sharing ended) takes it away; a subscription grants it until it
    /// expires (renewing unless `willRenew` says not); a non-consumable for good.
    func actions(_ catalog: PaymentsCatalog, willRenew: Bool = true) throws(PaymentsError) -> [ProviderEvent.Action] {
        guard let product = catalog.product(productID) else {
            throw .validationFailed(field: "productId", reason: "'\(productID)' is not a configured product (paymentsProducts); add it with its entitlement")
        }
        if revocationDate != nil { return [.revoke(entitlement: product.entitlement, product: productID)] }
        switch type {
        case "Auto-Renewable Subscription":
            return [.activate(entitlement: product.entitlement, product: productID, expiresAt: expiresDate, willRenew: willRenew)]
        case "Non-Consumable":
            return [.activate(entitlement: product.entitlement, product: productID, expiresAt: nil, willRenew: false)]
        case "Non-Renewing Subscription":
            // The App Store gives no end: the product's period from the purchase.
            guard let length = product.period.nanoseconds else {
                return [.activate(entitlement: product.entitlement, product: productID, expiresAt: nil, willRenew: false)]
            }
            return [.activate(entitlement: product.entitlement, product: productID, expiresAt: expiresDate ?? purchaseDate + length, willRenew: false)]
        default:
            throw .validationFailed(field: "type", reason: "a \(type) purchase grants no entitlement")
        }
    }
}
