// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Testing
import TestSupport
@testable import Payments

/// StoreKit 2 with no middleman, end to end through the plugin (SQLite, or PostgreSQL with
/// APPD_TEST_ENGINE=postgres): an app's submitted transactions and the App Store's
/// notifications move the entitlement exactly as the App Store signed them.
@Suite(.cleansUp) struct AppStorePurchaseTests {
    let month: Int64 = 30 * 86_400_000

    func token(_ h: Harness, _ caller: Caller) async throws -> String {
        try await h.bus.send(PaymentsInterface.AppStoreAccountToken(), as: caller).token
    }

    func submit(
        _ h: Harness, _ caller: Caller, _ claims: JSONValue, chain: Chain = AppStoreChains.good
    ) async throws
        -> PaymentsInterface.SubmitAppStoreTransaction.Reply
    {
        try await h.bus.send(PaymentsInterface.SubmitAppStoreTransaction(signedTransaction: try chain.sign(claims)), as: caller)
    }

    func notify(_ h: Harness, _ body: String) async throws -> Ingested {
        try await h.bus.send(PaymentsInterface.IngestWebhook(provider: "appstore", headers: [:], body: body))
    }

    @Test func aSubmittedPurchaseGrantsOnceAndALaterRefundRevokes() async throws {
        let h = try await Harness.make()
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        let token = try await token(h, caller)
        #expect(try await self.token(h, caller) == token, "the same token every time")
        let t0 = h.clock.now.nanosecondsSinceEpoch / 1_000_000
        let bought = AppStorePayloads.transaction(id: "100", original: "100", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0, token: token)
        let reply = try await submit(h, caller, bought)
        #expect(reply.transactionId == "100" && reply.productId == "pro_monthly")
        var pro = try #require(try await h.pro(caller))
        #expect(pro.active && pro.source == "appstore" && pro.product == "pro_monthly" && pro.willRenew)
        #expect(pro.expiresAt == WallTime(nanosecondsSinceEpoch: (t0 + month) * 1_000_000).rfc3339)
        // The same signed transaction again (the app retries): nothing changes.
        _ = try await submit(h, caller, bought)
        #expect(try await h.pro(caller)?.history.count == 1)
        // StoreKit's Transaction.updates later delivers the same purchase, refunded.
        let refunded = AppStorePayloads.transaction(
            id: "100", original: "100", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0 + 5000, token: token, revokedMillis: t0 + 4000)
        _ = try await submit(h, caller, refunded)
        pro = try #require(try await h.pro(caller))
        #expect(!pro.active)
        #expect(pro.history.map(\.change) == ["granted", "revoked"])
        // Restore recomputes from what was stored: still revoked.
        let restored = try await h.bus.send(PaymentsInterface.Restore(), as: caller)
        #expect(restored.entitlements.first { $0.name == "pro" }?.active == false)
    }

    @Test func anotherAccountsPurchaseIsForeign() async throws {
        let h = try await Harness.make()
        let (ada, _) = try await h.user("ada@example.com", onboarded: false).identity
        let (bob, _) = try await h.user("bob@example.com", onboarded: false).identity
        let adaToken = try await token(h, ada)
        let t0 = h.clock.now.nanosecondsSinceEpoch / 1_000_000
        // Ada's purchase (her token) sent by Bob's app.
        let adas = AppStorePayloads.transaction(id: "200", original: "200", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0, token: adaToken)
        await expectPaymentsError("ForeignTransaction") { _ = try await submit(h, bob, adas) }
        // A purchase made without a token: the first account to submit it keeps it.
        let untokened = AppStorePayloads.transaction(id: "300", original: "300", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0)
        let signed = try AppStoreChains.good.sign(untokened)
        _ = try await h.bus.send(PaymentsInterface.SubmitAppStoreTransaction(signedTransaction: signed), as: ada)
        await expectPaymentsError("ForeignTransaction") {
            _ = try await h.bus.send(PaymentsInterface.SubmitAppStoreTransaction(signedTransaction: signed), as: bob)
        }
        let renewed = AppStorePayloads.transaction(id: "301", original: "300", purchasedMillis: t0 + month, expiresMillis: t0 + 2 * month, signedMillis: t0 + 10)
        await expectPaymentsError("ForeignTransaction") { _ = try await submit(h, bob, renewed) }
        #expect(try await h.pro(bob)?.active != true)
        #expect(try await h.pro(ada)?.active == true)
    }

    @Test func forgeriesAndUnknownProductsChangeNothing() async throws {
        let h = try await Harness.make()
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        let token = try await token(h, caller)
        let t0 = h.clock.now.nanosecondsSinceEpoch / 1_000_000
        let bought = AppStorePayloads.transaction(id: "400", original: "400", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0, token: token)
        for chain in [AppStoreChains.otherRoot, AppStoreChains.leafWithoutOID, AppStoreChains.expiredIntermediate, AppStoreChains.intermediateWithoutOID] {
            await expectPaymentsError("InvalidSignature") { _ = try await submit(h, caller, bought, chain: chain) }
        }
        await expectPaymentsError("InvalidSignature") {
            _ = try await submit(
                h, caller,
                AppStorePayloads.transaction(
                    id: "401", original: "401", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0, token: token, bundle: "com.other.app"))
        }
        await expectPaymentsError("ValidationFailed") {
            _ = try await submit(
                h, caller,
                AppStorePayloads.transaction(id: "402", original: "402", product: "gems_100", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0, token: token))
        }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events") == 0)
        #expect(try await h.pro(caller)?.active != true)
    }

    /// Notifications v2: applied once per notificationUUID, in the order their signed dates say
    /// even when delivered out of order; a purchase without a token is found by the account
    /// that submitted it.
    @Test func notificationsMoveTheEntitlementInSignedOrder() async throws {
        let h = try await Harness.make()
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        let token = try await token(h, caller)
        let t0 = h.clock.now.nanosecondsSinceEpoch / 1_000_000
        func signedTransaction(_ id: String, expires: Int64, signed: Int64, revoked: Int64? = nil) throws -> String {
            try AppStoreChains.good.sign(
                AppStorePayloads.transaction(
                    id: id, original: "500", purchasedMillis: t0, expiresMillis: expires, signedMillis: signed, token: token, revokedMillis: revoked))
        }
        let subscribed = try AppStorePayloads.notification(
            "n-1", type: "SUBSCRIBED", subtype: "INITIAL_BUY", signedMillis: t0, transaction: try signedTransaction("500", expires: t0 + month, signed: t0))
        let first = try await notify(h, subscribed)
        #expect(!first.duplicate && first.warning == nil)
        var pro = try #require(try await h.pro(caller))
        #expect(pro.active && pro.source == "appstore")
        #expect(try await notify(h, subscribed).duplicate, "a redelivery is a duplicate")
        // Auto-renew turned off: still active, will not renew.
        let renewalOff = try AppStoreChains.good.sign([
            "originalTransactionId": "500", "autoRenewStatus": 0, "productId": "pro_monthly", "signedDate": .int(t0 + 1000), "environment": "Production",
        ])
        _ = try await notify(
            h,
            try AppStorePayloads.notification(
                "n-2", type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signedMillis: t0 + 1000,
                transaction: try signedTransaction("500", expires: t0 + month, signed: t0 + 1000), renewal: renewalOff))
        pro = try #require(try await h.pro(caller))
        #expect(pro.active && !pro.willRenew)
        // A refund signed at t0+3000 arrives before a renewal signed at t0+2000: the renewal,
        // older, must not bring the entitlement back.
        let refund = try AppStorePayloads.notification(
            "n-4", type: "REFUND", signedMillis: t0 + 3000, transaction: try signedTransaction("501", expires: t0 + 2 * month, signed: t0 + 3000, revoked: t0 + 2900))
        let lateRenewal = try AppStorePayloads.notification(
            "n-3", type: "DID_RENEW", signedMillis: t0 + 2000, transaction: try signedTransaction("501", expires: t0 + 2 * month, signed: t0 + 2000))
        _ = try await notify(h, refund)
        _ = try await notify(h, lateRenewal)
        pro = try #require(try await h.pro(caller))
        #expect(!pro.active, "the later-signed refund stands")
        #expect(pro.history.last?.change == "revoked")
        // A forged notification (another root) is refused and not stored.
        let forged = try AppStorePayloads.notification(
            "n-5", type: "DID_RENEW", signedMillis: t0 + 4000, transaction: try signedTransaction("502", expires: t0 + 3 * month, signed: t0 + 4000),
            chain: AppStoreChains.otherRoot)
        await expectPaymentsError("InvalidSignature") { _ = try await notify(h, forged) }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events WHERE event_id = 'n-5'") == 0)
        await expectPaymentsError("InvalidSignature") {
            _ = try await notify(
                h, try AppStorePayloads.notification("n-6", type: "TEST", signedMillis: t0 + 4000, transaction: nil, bundle: "com.other.app"))
        }
    }

    @Test func aNotificationWithoutATokenFindsTheAccountThatSubmittedThePurchase() async throws {
        let h = try await Harness.make()
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        let t0 = h.clock.now.nanosecondsSinceEpoch / 1_000_000
        _ = try await submit(
            h, caller, AppStorePayloads.transaction(id: "600", original: "600", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0))
        #expect(try await h.pro(caller)?.active == true)
        let expired = try AppStorePayloads.notification(
            "n-exp", type: "EXPIRED", subtype: "VOLUNTARY", signedMillis: t0 + month + 1000,
            transaction: try AppStoreChains.good.sign(
                AppStorePayloads.transaction(id: "600", original: "600", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0 + month + 1000)))
        h.clock.advance(seconds: month / 1000 + 2)
        let ingested = try await notify(h, expired)
        #expect(ingested.warning == nil, "\(ingested)")
        let pro = try #require(try await h.pro(caller))
        #expect(!pro.active && pro.history.last?.change == "expired")
        // A notification about a purchase no account submitted and without a token: stored,
        // reported, no effect.
        let stray = try AppStorePayloads.notification(
            "n-stray", type: "SUBSCRIBED", signedMillis: t0 + month + 2000,
            transaction: try AppStoreChains.good.sign(
                AppStorePayloads.transaction(id: "700", original: "700", purchasedMillis: t0, expiresMillis: t0 + 2 * month, signedMillis: t0 + month + 2000)))
        let strayResult = try await notify(h, stray)
        #expect(!strayResult.duplicate)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_event_users WHERE event_id = 'n-stray'") == 0)
    }

    /// A lifetime purchase and a subscription granting the same entitlement from the same store:
    /// the subscription's renewal does not shorten the lifetime hold, nor its expiry or refund end it.
    @Test func aSubscriptionEndingDoesNotEndALifetimePurchase() async throws {
        let h = try await Harness.make()
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        let token = try await token(h, caller)
        let t0 = h.clock.now.nanosecondsSinceEpoch / 1_000_000
        _ = try await submit(
            h, caller,
            AppStorePayloads.transaction(id: "800", original: "800", purchasedMillis: t0, expiresMillis: t0 + month, signedMillis: t0, token: token))
        _ = try await submit(
            h, caller,
            AppStorePayloads.transaction(
                id: "801", original: "801", product: "pro_lifetime", type: "Non-Consumable", purchasedMillis: t0 + 10, signedMillis: t0 + 10, token: token))
        var pro = try #require(try await h.pro(caller))
        #expect(pro.active && pro.expiresAt == nil && pro.product == "pro_lifetime")
        _ = try await submit(
            h, caller,
            AppStorePayloads.transaction(
                id: "802", original: "800", purchasedMillis: t0 + month, expiresMillis: t0 + 2 * month, signedMillis: t0 + 20, token: token))
        pro = try #require(try await h.pro(caller))
        #expect(pro.active && pro.expiresAt == nil, "a renewal does not shorten the lifetime hold: \(pro)")
        _ = try await notify(
            h,
            try AppStorePayloads.notification(
                "n-refund-800", type: "REFUND", signedMillis: t0 + 30,
                transaction: try AppStoreChains.good.sign(
                    AppStorePayloads.transaction(
                        id: "802", original: "800", purchasedMillis: t0 + month, expiresMillis: t0 + 2 * month, signedMillis: t0 + 30, token: token,
                        revokedMillis: t0 + 25))))
        pro = try #require(try await h.pro(caller))
        #expect(pro.active && pro.expiresAt == nil && pro.product == "pro_lifetime", "the subscription's refund leaves the lifetime purchase: \(pro)")
        // The lifetime purchase refunded: now it ends.
        _ = try await submit(
            h, caller,
            AppStorePayloads.transaction(
                id: "801", original: "801", product: "pro_lifetime", type: "Non-Consumable", purchasedMillis: t0 + 10, signedMillis: t0 + 40, token: token,
                revokedMillis: t0 + 35))
        #expect(try await h.pro(caller)?.active == false)
    }
}
