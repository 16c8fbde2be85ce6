// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The events the payments plugin publishes; each is about the paying user.
public enum PaymentsEvents {
    public static let all: [any Event.Type] = [EntitlementChanged.self, PurchaseFailed.self]
}

/// An entitlement was granted, renewed, cancelled, expired or revoked.
public struct EntitlementChanged: OwnedEvent, Equatable {
    public static let topic = "payments.entitlementChanged"
    public var userId: String
    public var entitlement: String
    /// granted, renewed, renewalCancelled, expired or revoked.
    public var change: String
    /// The provider (revenuecat, stripe) or admin.
    public var source: String
    public var product: String?
    public var active: Bool
    public var expiresAt: String?
    public init(userId: String, entitlement: String, change: String, source: String, product: String?, active: Bool, expiresAt: String?) {
        self.userId = userId
        self.entitlement = entitlement
        self.change = change
        self.source = source
        self.product = product
        self.active = active
        self.expiresAt = expiresAt
    }
}

/// A provider reported a failed purchase or renewal payment.
public struct PurchaseFailed: OwnedEvent, Equatable {
    public static let topic = "payments.purchaseFailed"
    public var userId: String
    public var provider: String
    public var product: String?
    public var reason: String
    public init(userId: String, provider: String, product: String?, reason: String) {
        self.userId = userId
        self.provider = provider
        self.product = product
        self.reason = reason
    }
}
