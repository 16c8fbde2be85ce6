// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Payments`: products, entitlements from provider webhooks and admin grants, and
/// the free quotas of metered features.
public enum PaymentsInterface {
    public static let idl = """
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

        # StoreKit 2, without a middleman: verifies a transaction the app got from the App Store
        # (its jwsRepresentation: the certificate chain up to the installed Apple root, Apple's
        # certificate markers, the ES256 signature, the bundle id and environment) and applies it
        # to the signed-in user's entitlements, through the same product table as the other
        # providers. A transaction whose appAccountToken is not this user's (AppStoreAccountToken),
        # or one already bound to another account, is ForeignTransaction. Submitting the same
        # signed transaction again changes nothing; a later one (a renewal, a refund) moves the
        # entitlement as the App Store says.
        method SubmitAppStoreTransaction(signedTransaction: string) -> (transactionId: string, productId: string, entitlements: []Entitlement)
        # The UUID the app passes to StoreKit as appAccountToken — and to Google Play Billing as
        # obfuscatedAccountId — for the signed-in user (made on first ask, the same afterwards):
        # the stores' notifications then name the account.
        method AppStoreAccountToken() -> (token: string)
        # Google Play Billing, without a middleman: asks the Play Developer API (as the configured
        # service account) for the purchase the app made — a subscription, or a one-time product
        # for a product whose period is lifetime — applies it to the signed-in user's
        # entitlements and acknowledges it. ForeignTransaction when its obfuscatedAccountId is not
        # this user's or another account submitted it first.
        method SubmitGooglePlayPurchase(productId: string, purchaseToken: string) -> (entitlements: []Entitlement)
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

        # category: paymentRequired
        error PaymentRequired (entitlement: string, remaining: int, resetsAt: ?string)
        # category: invalid
        error InvalidSignature (reason: string)
        # category: notFound
        error UnknownProvider (provider: string)
        # category: invalid
        error MalformedEvent (reason: string)
        # category: notFound
        error UnknownAccount (email: string)
        # category: notFound
        error UnknownEntitlement (entitlement: string)
        # category: invalid
        error ValidationFailed (field: string, reason: string)
        # The purchase belongs to another account (its appAccountToken, or an earlier submission).
        # category: forbidden
        error ForeignTransaction (reason: string)
        # A payment provider could not be reached or refused the request; nothing changed.
        # category: unavailable
        error ProviderUnavailable (provider: string, reason: string)

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [
        Products.self, Status.self, Restore.self, SubmitAppStoreTransaction.self, AppStoreAccountToken.self, SubmitGooglePlayPurchase.self, Grant.self, Revoke.self,
        UserStatus.self,
        IngestWebhook.self,
    ]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = PaymentsError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }

    public struct ProductInfo: Codable, Sendable, Equatable {
        public var id: String
        public var entitlement: String
        public var period: String
        public init(id: String, entitlement: String, period: String) {
            self.id = id
            self.entitlement = entitlement
            self.period = period
        }
    }
    public struct MeterPolicy: Codable, Sendable, Equatable {
        public var name: String
        public var limit: Int
        public var period: String
        public var entitlement: String
        public init(name: String, limit: Int, period: String, entitlement: String) {
            self.name = name
            self.limit = limit
            self.period = period
            self.entitlement = entitlement
        }
    }

    public struct Products: Command {
        public static let method = "io.appd.Payments.Products"
        public static let readsOnly = true
        public struct Reply: Codable, Sendable {
            public var products: [ProductInfo]
            public var entitlements: [String]
            public var meters: [MeterPolicy]
            public init(products: [ProductInfo], entitlements: [String], meters: [MeterPolicy]) {
                self.products = products
                self.entitlements = entitlements
                self.meters = meters
            }
        }
        public init() {}
    }
    public struct Status: Command {
        public static let method = "io.appd.Payments.Status"
        public static let readsOnly = true
        public static var requirements: [Requirement] { [.session] }
        public typealias Reply = AccountStatus
        public init() {}
    }
    public struct Restore: Command {
        public static let method = "io.appd.Payments.Restore"
        public static var requirements: [Requirement] { [.session, .idempotent] }
        public struct Reply: Codable, Sendable {
            public var entitlements: [Entitlement]
            public init(entitlements: [Entitlement]) {
                self.entitlements = entitlements
            }
        }
        public init() {}
    }
    public struct SubmitAppStoreTransaction: Command {
        public static let method = "io.appd.Payments.SubmitAppStoreTransaction"
        public static var requirements: [Requirement] { [.session, .idempotent] }
        public struct Reply: Codable, Sendable {
            public var transactionId: String
            public var productId: String
            public var entitlements: [Entitlement]
            public init(transactionId: String, productId: String, entitlements: [Entitlement]) {
                self.transactionId = transactionId
                self.productId = productId
                self.entitlements = entitlements
            }
        }
        public var signedTransaction: String
        public init(signedTransaction: String) {
            self.signedTransaction = signedTransaction
        }
    }

    public struct AppStoreAccountToken: Command {
        public static let method = "io.appd.Payments.AppStoreAccountToken"
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable {
            public var token: String
            public init(token: String) {
                self.token = token
            }
        }
        public init() {}
    }

    public struct SubmitGooglePlayPurchase: Command {
        public static let method = "io.appd.Payments.SubmitGooglePlayPurchase"
        public static var requirements: [Requirement] { [.session, .idempotent] }
        public struct Reply: Codable, Sendable {
            public var entitlements: [Entitlement]
            public init(entitlements: [Entitlement]) {
                self.entitlements = entitlements
            }
        }
        public var productId: String
        public var purchaseToken: String
        public init(productId: String, purchaseToken: String) {
            self.productId = productId
            self.purchaseToken = purchaseToken
        }
    }

    public struct Grant: Command {
        public static let method = "io.appd.Payments.Grant"
        public static var requirements: [Requirement] { [.admin, .idempotent] }
        public typealias Reply = EntitlementReply
        public var email: String
        public var entitlement: String
        public var expiresAt: String?
        public var reason: String
        public init(email: String, entitlement: String, expiresAt: String? = nil, reason: String) {
            self.email = email
            self.entitlement = entitlement
            self.expiresAt = expiresAt
            self.reason = reason
        }
    }
    public struct Revoke: Command {
        public static let method = "io.appd.Payments.Revoke"
        public static var requirements: [Requirement] { [.admin, .idempotent] }
        public typealias Reply = RevokeReply
        public var email: String
        public var entitlement: String
        public var reason: String
        public var includePaid: Bool?
        public init(email: String, entitlement: String, reason: String, includePaid: Bool? = nil) {
            self.email = email
            self.entitlement = entitlement
            self.reason = reason
            self.includePaid = includePaid
        }
    }
    public struct RevokeReply: Codable, Sendable {
        public var entitlement: Entitlement
        /// The sources whose grant ended (`admin`, `stripe`, `revenuecat`).
        public var revoked: [String]
        public init(entitlement: Entitlement, revoked: [String]) {
            self.entitlement = entitlement
            self.revoked = revoked
        }
    }
    public struct UserStatus: Command {
        public static let method = "io.appd.Payments.UserStatus"
        public static var requirements: [Requirement] { [.admin] }
        public struct Reply: Codable, Sendable {
            public var userId: String
            public var entitlements: [Entitlement]
            public var meters: [Meter]
            public init(userId: String, entitlements: [Entitlement], meters: [Meter]) {
                self.userId = userId
                self.entitlements = entitlements
                self.meters = meters
            }
        }
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }
    public struct IngestWebhook: Command {
        public static let method = "io.appd.Payments.IngestWebhook"
        /// Providers deliver to /webhooks/<provider> as they send it (the signature covers the raw body).
        public static let requirements: [Requirement] = [.socket]
        public typealias Reply = Ingested
        public var provider: String
        public var headers: [String: String]
        public var body: String
        public init(provider: String, headers: [String: String], body: String) {
            self.provider = provider
            self.headers = headers
            self.body = body
        }
    }

    public struct AccountStatus: Codable, Sendable {
        public var entitlements: [Entitlement]
        public var meters: [Meter]
        public init(entitlements: [Entitlement], meters: [Meter]) {
            self.entitlements = entitlements
            self.meters = meters
        }
    }
    public struct EntitlementReply: Codable, Sendable {
        public var entitlement: Entitlement
        public init(entitlement: Entitlement) {
            self.entitlement = entitlement
        }
    }
}
