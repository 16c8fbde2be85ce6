// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// A real-time developer notification as Pub/Sub pushes it: `{"message": {"data": <base64
/// DeveloperNotification>, "messageId": …}, "subscription": …}`. It carries no purchase state,
/// only which purchase changed; appd then asks the Play Developer API.
struct GooglePlayNotification: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case subscription(type: Int64, token: String, productID: String)
        case oneTimeProduct(type: Int64, token: String, productID: String)
        /// A refund or chargeback; `subscription` from its `productType` (1).
        case voided(token: String, subscription: Bool)
        case test
    }

    var messageID: String
    var packageName: String
    var kind: Kind

    init(_ body: [UInt8]) throws(PaymentsError) {
        let push = try parseWebhookJSON(body)
        guard let message = push["message"], let data = message.string("data"), let decoded = Base64.decode(data) else {
            throw .malformedEvent(reason: "not a Pub/Sub push: no message.data")
        }
        guard let id = message.string("messageId") ?? message.string("message_id"), !id.isEmpty, id.utf8.count <= 100 else {
            throw .malformedEvent(reason: "the push has no messageId")
        }
        let notification = try parseWebhookJSON(decoded)
        guard let package = notification.string("packageName"), !package.isEmpty else { throw .malformedEvent(reason: "the notification has no packageName") }
        messageID = id
        packageName = package
        func token(_ object: JSONValue) throws(PaymentsError) -> String {
            guard let token = object.string("purchaseToken"), !token.isEmpty, token.utf8.count <= 4096 else {
                throw .malformedEvent(reason: "the notification has no purchaseToken")
            }
            return token
        }
        if let sub = notification["subscriptionNotification"] {
            guard let type = sub.int("notificationType"), let product = sub.string("subscriptionId") else {
                throw .malformedEvent(reason: "a subscription notification without notificationType or subscriptionId")
            }
            kind = .subscription(type: type, token: try token(sub), productID: product)
        } else if let one = notification["oneTimeProductNotification"] {
            guard let type = one.int("notificationType"), let product = one.string("sku") else {
                throw .malformedEvent(reason: "a one-time product notification without notificationType or sku")
            }
            kind = .oneTimeProduct(type: type, token: try token(one), productID: product)
        } else if let voided = notification["voidedPurchaseNotification"] {
            kind = .voided(token: try token(voided), subscription: voided.int("productType") == 1)
        } else if notification["testNotification"] != nil {
            kind = .test
        } else {
            throw .malformedEvent(reason: "a notification of no kind appd knows")
        }
    }

    /// Google's names for subscription notification types (for the audit trail).
    static func subscriptionType(_ type: Int64) -> String {
        let names: [Int64: String] = [
            1: "RECOVERED", 2: "RENEWED", 3: "CANCELED", 4: "PURCHASED", 5: "ON_HOLD", 6: "IN_GRACE_PERIOD", 7: "RESTARTED", 8: "PRICE_CHANGE_CONFIRMED",
            9: "DEFERRED", 10: "PAUSED", 11: "PAUSE_SCHEDULE_CHANGED", 12: "REVOKED", 13: "EXPIRED", 17: "ITEMS_CHANGED", 18: "CANCELLATION_SCHEDULED",
            19: "PRICE_CHANGE_UPDATED", 20: "PENDING_PURCHASE_CANCELED",
        ]
        return "SUBSCRIPTION_" + (names[type] ?? "\(type)")
    }
}
