// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Testing
@testable import Payments

/// Google Play's purchase states as entitlements, and Pub/Sub pushes as notifications (the
/// network side, with real tokens and keys, is Tests/Interop/googleplay.py).
@Suite struct GooglePlayRecordTests {
    let catalog = PaymentsCatalog()
    let now: Int64 = 1_800_000_000_000_000_000
    let later = "2027-02-15T08:00:00.123Z"

    func subscription(_ state: String, renewing: Bool = true, expiry: String? = nil) -> GooglePlayRecord {
        GooglePlayRecord(
            id: "t:m", type: "SUBSCRIPTION_RENEWED", time: now, purchaseToken: "tok", productID: "pro_monthly", subscription: true,
            purchase: [
                "subscriptionState": .string(state), "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING",
                "externalAccountIdentifiers": ["obfuscatedExternalAccountId": "6F1B1D2C-7A8E-4B8B-9C3D-0E1F2A3B4C5D"],
                "lineItems": [["productId": "pro_monthly", "expiryTime": .string(expiry ?? later), "autoRenewingPlan": ["autoRenewEnabled": .bool(renewing)]]],
            ])
    }

    @Test func subscriptionStatesMoveTheEntitlement() throws {
        let expires = try #require(RFC3339.parse(later)).nanosecondsSinceEpoch
        #expect(subscription("SUBSCRIPTION_STATE_ACTIVE").actions(catalog) == [.activate(entitlement: "pro", product: "pro_monthly", expiresAt: expires, willRenew: true)])
        #expect(
            subscription("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", renewing: true).actions(catalog)
                == [.activate(entitlement: "pro", product: "pro_monthly", expiresAt: expires, willRenew: true)])
        #expect(
            subscription("SUBSCRIPTION_STATE_CANCELED", renewing: false).actions(catalog)
                == [.activate(entitlement: "pro", product: "pro_monthly", expiresAt: expires, willRenew: false)], "access lasts until the period ends")
        #expect(subscription("SUBSCRIPTION_STATE_CANCELED", expiry: "2020-01-01T00:00:00Z").actions(catalog) == [.expire(entitlement: "pro", product: "pro_monthly")])
        for ended in ["SUBSCRIPTION_STATE_EXPIRED", "SUBSCRIPTION_STATE_ON_HOLD", "SUBSCRIPTION_STATE_PAUSED"] {
            #expect(subscription(ended).actions(catalog) == [.expire(entitlement: "pro", product: "pro_monthly")], "\(ended)")
        }
        #expect(subscription("SUBSCRIPTION_STATE_PENDING").actions(catalog).isEmpty)
        var voided = subscription("SUBSCRIPTION_STATE_EXPIRED")
        voided.voided = true
        #expect(voided.actions(catalog) == [.revoke(entitlement: "pro", product: "pro_monthly")])
        var unknown = subscription("SUBSCRIPTION_STATE_ACTIVE")
        unknown.productID = "gems"
        #expect(unknown.actions(catalog).isEmpty, "a product appd does not sell grants nothing")
        #expect(subscription("SUBSCRIPTION_STATE_ACTIVE").accountToken == "6f1b1d2c-7a8e-4b8b-9c3d-0e1f2a3b4c5d")
        #expect(subscription("SUBSCRIPTION_STATE_ACTIVE").needsAcknowledgement)
    }

    @Test func oneTimeProductsAndTheStoredFormRoundTrip() throws {
        func product(_ state: Int64) -> GooglePlayRecord {
            GooglePlayRecord(
                id: "t:m", type: "ONE_TIME_PRODUCT_PURCHASED", time: now, purchaseToken: "tok", productID: "pro_lifetime", subscription: false,
                purchase: ["purchaseState": .int(state), "acknowledgementState": 0, "purchaseTimeMillis": "1800000000000"])
        }
        #expect(product(0).actions(catalog) == [.activate(entitlement: "pro", product: "pro_lifetime", expiresAt: nil, willRenew: false)])
        #expect(product(1).actions(catalog) == [.revoke(entitlement: "pro", product: "pro_lifetime")])
        #expect(product(2).actions(catalog).isEmpty, "pending")
        #expect(product(0).needsAcknowledgement && !product(1).needsAcknowledgement)
        let stored = subscription("SUBSCRIPTION_STATE_ACTIVE")
        #expect(try GooglePlayRecord(json: Array(stored.json.utf8)) == stored)
        #expect(try GooglePlayStored().decode(Array(stored.json.utf8), catalog: catalog) == stored.event(catalog))
    }

    @Test func pushesParseIntoTheirKindAndBadOnesAreRefused() throws {
        func push(_ notification: JSONValue, id: String = "m-1") -> [UInt8] {
            JSONWriter.bytes(["message": ["data": .string(Base64.encode(JSONWriter.bytes(notification))), "messageId": .string(id)], "subscription": "s"])
        }
        let renewed = try GooglePlayNotification(
            push([
                "packageName": "com.example.app", "eventTimeMillis": "1800000000000",
                "subscriptionNotification": ["notificationType": 2, "purchaseToken": "tok", "subscriptionId": "pro_monthly"],
            ]))
        #expect(renewed.kind == .subscription(type: 2, token: "tok", productID: "pro_monthly") && renewed.messageID == "m-1")
        #expect(GooglePlayNotification.subscriptionType(2) == "SUBSCRIPTION_RENEWED")
        let voided = try GooglePlayNotification(push(["packageName": "p", "voidedPurchaseNotification": ["purchaseToken": "tok", "productType": 1]]))
        #expect(voided.kind == .voided(token: "tok", subscription: true))
        #expect(try GooglePlayNotification(push(["packageName": "p", "testNotification": ["version": "1.0"]])).kind == .test)
        for bad: [UInt8] in [
            Array("not json".utf8), JSONWriter.bytes(["message": ["messageId": "m"]]),
            push(["packageName": "p", "subscriptionNotification": ["notificationType": 2, "subscriptionId": "x"]]),
            push(["subscriptionNotification": ["notificationType": 2, "purchaseToken": "t", "subscriptionId": "x"]]),
            push(["packageName": "p", "somethingElse": [:]]), push(["packageName": "p", "testNotification": [:]], id: ""),
        ] {
            #expect(throws: PaymentsError.self) { try GooglePlayNotification(bad) }
        }
    }
}
