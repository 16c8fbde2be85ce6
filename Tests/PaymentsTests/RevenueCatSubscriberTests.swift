// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Testing
@testable import Payments

/// RevenueCat's REST subscriber, as "Restore purchases" stores and applies it.
@Suite struct RevenueCatSubscriberTests {
    static let requested: Int64 = 1_800_000_000_000  // request_date_ms: 2027-01-15

    func snapshot(_ entitlements: String, subscriptions: String = "{}", user: String = "u_1") throws -> ProviderEvent {
        let body = """
            {"request_date_ms": \(Self.requested), "app_user_id": "\(user)",
             "subscriber": {"original_app_user_id": "$RCAnonymousID:1", "entitlements": \(entitlements), "subscriptions": \(subscriptions)}}
            """
        return try RevenueCatProvider(secret: "").decode(Array(body.utf8), catalog: PaymentsCatalog())
    }

    @Test func activeExpiredLifetimeAndGraceBecomeTheSameActionsAsWebhooks() throws {
        let event = try snapshot(
            """
            {"pro": {"expires_date": "2027-02-15T00:00:00Z", "product_identifier": "pro_monthly"},
             "old": {"expires_date": "2026-01-01T00:00:00Z", "product_identifier": "old_monthly"},
             "forever": {"expires_date": null, "product_identifier": "pro_lifetime"},
             "grace": {"expires_date": "2027-01-01T00:00:00Z", "grace_period_expires_date": "2027-01-20T00:00:00Z", "product_identifier": "g"}}
            """,
            subscriptions: #"{"pro_monthly": {"unsubscribe_detected_at": null}, "g": {"unsubscribe_detected_at": "2026-12-30T00:00:00Z"}}"#)
        #expect(event.provider == "revenuecat" && event.type == "SUBSCRIBER")
        #expect(event.id == "subscriber:u_1:\(Self.requested)", "one event per user and answer: a second identical restore is a duplicate")
        #expect(event.time == Self.requested * 1_000_000, "ordered by RevenueCat's request time, like a webhook by its event time")
        #expect(event.subject == .appUser("u_1"), "the app user id appd asked for, not RevenueCat's original one")
        #expect(
            event.actions == [
                .activate(entitlement: "forever", product: "pro_lifetime", expiresAt: nil, willRenew: false),
                .activate(entitlement: "grace", product: "g", expiresAt: RFC3339.parse("2027-01-20T00:00:00Z")!.nanosecondsSinceEpoch, willRenew: false),
                .expire(entitlement: "old", product: "old_monthly"),
                .activate(entitlement: "pro", product: "pro_monthly", expiresAt: RFC3339.parse("2027-02-15T00:00:00Z")!.nanosecondsSinceEpoch, willRenew: true),
            ])
    }

    @Test func aSnapshotThatIsNotOneIsMalformed() {
        #expect(throws: PaymentsError.self) { try snapshot(#"{"pro": {"expires_date": "next tuesday"}}"#) }
        #expect(throws: PaymentsError.self) {
            try RevenueCatProvider(secret: "").decode(Array(#"{"subscriber": {"entitlements": {}}}"#.utf8), catalog: PaymentsCatalog())
        }
    }

    @Test func theAppUserIdIsOnePathSegment() {
        #expect(RevenueCatAPI.pathSegment("u_AZaz09-._~") == "u_AZaz09-._~")
        #expect(RevenueCatAPI.pathSegment("a/b?c d") == "a%2Fb%3Fc%20d")
        #expect(RevenueCatAPI.pathSegment("é") == "%C3%A9")
    }
}
