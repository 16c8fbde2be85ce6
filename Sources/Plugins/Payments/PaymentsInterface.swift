import Bus

/// `io.appd.Payments`: products, entitlements from provider webhooks and admin grants, and
/// the free quotas of metered features.
enum PaymentsInterface {
    static let idl = """
        # Payments. Entitlements (such as pro) come from a payment provider's webhooks or from an
        # admin grant; metered features give users without the entitlement a free quota per period.
        interface io.appd.Payments

        type Product (
          id: string,
          entitlement: string,
          period: (day, week, month, year, lifetime)
        )

        type MeterPolicy (
          name: string,
          limit: int,
          period: (day, week, month, year, lifetime),
          entitlement: string
        )

        # One change to an entitlement: granted, renewed, cancelled, expired or revoked.
        type EntitlementChange (
          change: string,
          source: string,
          product: ?string,
          # The provider's event id, or the admin's reason.
          reference: ?string,
          at: string
        )

        type Entitlement (
          name: string,
          active: bool,
          # revenuecat, stripe or admin.
          source: ?string,
          product: ?string,
          # RFC 3339; null for a lifetime entitlement.
          expiresAt: ?string,
          willRenew: bool,
          history: []EntitlementChange
        )

        type Meter (
          name: string,
          entitlement: string,
          # True when the user has the entitlement: the quota does not apply.
          unlimited: bool,
          used: int,
          limit: int,
          resetsAt: string
        )

        method Products() -> (products: []Product, entitlements: []string, meters: []MeterPolicy)

        # The signed-in user's entitlements and meters.
        method Status() -> (entitlements: []Entitlement, meters: []Meter)

        # "Restore purchases": with RevenueCat's API key configured, asks RevenueCat for the
        # signed-in user's subscriber and applies it (stored like a webhook event: ordered with
        # them, once per answer); then recomputes the user's entitlements from the stored
        # provider events and admin grants. ProviderUnavailable when RevenueCat cannot be asked.
        method Restore() -> (entitlements: []Entitlement)

        # Admin: grants an entitlement until expiresAt (RFC 3339), or for good.
        method Grant(email: string, entitlement: string, expiresAt: ?string, reason: string) -> (entitlement: Entitlement)

        # Admin: ends an administrator's grant of the entitlement. A provider-paid source (a
        # subscription the user pays for) is ended only with includePaid. The reply names the
        # sources it ended (none: nothing was granting it that way) and the entitlement as it
        # stands after — still active when a paid source remains.
        method Revoke(
          email: string,
          entitlement: string,
          # Goes into the audit trail.
          reason: string,
          # Also end what providers granted (a refund handled outside the provider, say).
          includePaid: ?bool
        ) -> (entitlement: Entitlement, revoked: []string)

        # Admin: another user's entitlements and meters.
        method UserStatus(email: string) -> (userId: string, entitlements: []Entitlement, meters: []Meter)

        # Verifies and stores one webhook delivery from a provider (revenuecat or stripe), exactly
        # as received. duplicate is true when this event was already stored (it changes nothing).
        # warning says when the event names no existing account (stored, but it changed nothing).
        method IngestWebhook(provider: string, headers: [string]string, body: string) -> (eventId: string, duplicate: bool, warning: ?string)

        error PaymentRequired (entitlement: string, remaining: int, resetsAt: ?string)
        error InvalidSignature (reason: string)
        error UnknownProvider (provider: string)
        error MalformedEvent (reason: string)
        error UnknownAccount (email: string)
        error UnknownEntitlement (entitlement: string)
        error ValidationFailed (field: string, reason: string)
        # A payment provider could not be reached or refused the request; nothing changed.
        error ProviderUnavailable (provider: string, reason: string)

        """

    struct ProductInfo: Codable, Sendable, Equatable {
        var id: String
        var entitlement: String
        var period: String
    }
    struct MeterPolicy: Codable, Sendable, Equatable {
        var name: String
        var limit: Int
        var period: String
        var entitlement: String
    }

    struct Products: Command {
        static let method = "io.appd.Payments.Products"
        struct Reply: Codable, Sendable {
            var products: [ProductInfo]
            var entitlements: [String]
            var meters: [MeterPolicy]
        }
    }
    struct Status: Command {
        static let method = "io.appd.Payments.Status"
        static var requirements: [Requirement] { [.session] }
        typealias Reply = AccountStatus
    }
    struct Restore: Command {
        static let method = "io.appd.Payments.Restore"
        static var requirements: [Requirement] { [.session, .idempotent] }
        struct Reply: Codable, Sendable { var entitlements: [Entitlement] }
    }
    struct Grant: Command {
        static let method = "io.appd.Payments.Grant"
        static var requirements: [Requirement] { [.admin, .idempotent] }
        typealias Reply = EntitlementReply
        var email: String
        var entitlement: String
        var expiresAt: String?
        var reason: String
    }
    struct Revoke: Command {
        static let method = "io.appd.Payments.Revoke"
        static var requirements: [Requirement] { [.admin, .idempotent] }
        typealias Reply = RevokeReply
        var email: String
        var entitlement: String
        var reason: String
        var includePaid: Bool?
    }
    struct RevokeReply: Codable, Sendable {
        var entitlement: Entitlement
        /// The sources whose grant ended (`admin`, `stripe`, `revenuecat`).
        var revoked: [String]
    }
    struct UserStatus: Command {
        static let method = "io.appd.Payments.UserStatus"
        static var requirements: [Requirement] { [.admin] }
        struct Reply: Codable, Sendable {
            var userId: String
            var entitlements: [Entitlement]
            var meters: [Meter]
        }
        var email: String
    }
    struct IngestWebhook: Command {
        static let method = "io.appd.Payments.IngestWebhook"
        typealias Reply = Ingested
        var provider: String
        var headers: [String: String]
        var body: String
    }

    struct AccountStatus: Codable, Sendable {
        var entitlements: [Entitlement]
        var meters: [Meter]
    }
    struct EntitlementReply: Codable, Sendable { var entitlement: Entitlement }
}

/// A webhook delivery's outcome.
public struct Ingested: Codable, Sendable, Equatable {
    public var eventId: String
    public var duplicate: Bool
    /// Set when the event names app user ids no account has: it is stored (a retry is a
    /// duplicate) but changed no entitlement — usually a wrong id in the provider's setup.
    public var warning: String?

    public init(eventId: String, duplicate: Bool, warning: String? = nil) {
        self.eventId = eventId
        self.duplicate = duplicate
        self.warning = warning
    }
}

public struct EntitlementChange: Codable, Sendable, Equatable {
    public var change: String
    public var source: String
    public var product: String?
    public var reference: String?
    public var at: String
}

public struct Entitlement: Codable, Sendable, Equatable {
    public var name: String
    public var active: Bool
    public var source: String?
    public var product: String?
    public var expiresAt: String?
    public var willRenew: Bool
    public var history: [EntitlementChange]
}

public struct Meter: Codable, Sendable, Equatable {
    public var name: String
    public var entitlement: String
    public var unlimited: Bool
    public var used: Int
    public var limit: Int
    public var resetsAt: String
}
