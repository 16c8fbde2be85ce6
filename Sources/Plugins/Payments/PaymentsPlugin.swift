// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage
import EventDelivery
import Crypto

/// Products and entitlements from provider webhooks and admin grants (`io.appd.Payments`), the
/// paywall gate, the expiry service, its webhook routes on the HTTP server, and erasure of a
/// deleted account's payment data.
public struct PaymentsPlugin: Plugin {
    public struct Options: Sendable {
        public var catalog = PaymentsCatalog()
        /// The `Authorization` header value configured for RevenueCat's webhook (nil: not accepted).
        public var revenueCatSecret: String?
        /// Stripe endpoint signing secrets (`whsec_…`); several while one rotates.
        public var stripeSecrets: [String] = []
        /// The largest webhook body accepted (HTTP and IngestWebhook).
        public var maxWebhookBytes = 256 * 1024
        /// RevenueCat's secret API key (`sk_…`): Restore then asks RevenueCat (nil: it only
        /// recomputes from stored events).
        public var revenueCatAPIKey: String?
        public var revenueCatAPIURL = "https://api.revenuecat.com/v1"
        /// Trusted CA certificates (PEM) for the API instead of the system store.
        public var revenueCatCAFile: String?
        /// StoreKit 2 without a middleman: the file of the root certificates App Store payloads
        /// must chain to (Apple Root CA - G3, DER as Apple publishes it, or PEM); nil refuses
        /// App Store purchases. appd ships no certificate.
        public var appStoreRootCertificates: String?
        /// The app's bundle id: App Store payloads for another app are refused.
        public var appStoreBundleID: String?
        /// The App Store environments accepted (`Production`, `Sandbox`).
        public var appStoreEnvironments: Set<String> = ["Production"]
        /// The App Store Server API key (App Store Connect → Users and Access → Integrations →
        /// In-App Purchase): issuer id, key id and the `.p8`'s PEM. All three: Restore asks Apple.
        public var appStoreIssuerID: String?
        public var appStoreKeyID: String?
        public var appStorePrivateKey: String?
        /// The App Store Server API's base URL (nil: Apple's, for the first accepted environment:
        /// Production if accepted, else Sandbox).
        public var appStoreAPIURL: String?
        /// Trusted CA certificates (PEM) for the App Store Server API instead of the system store.
        public var appStoreCAFile: String?
        /// Google Play Billing: the app's package name; the service account's JSON key (its text;
        /// the account needs the Play Console's "View financial data" and "Manage orders"); the
        /// audience and service account of the Pub/Sub push subscription.
        public var googlePlayPackageName: String?
        public var googlePlayServiceAccount: String?
        public var googlePlayPushAudience: String?
        public var googlePlayPushServiceAccount: String?
        /// The Play Developer API's base (nil: Google's), Google's signing keys for pushes (nil:
        /// Google's), and trusted CA certificates (PEM) for both instead of the system store.
        public var googlePlayAPIURL: String?
        public var googlePlayKeysURL: String?
        public var googlePlayCAFile: String?
        public init() {}
    }

    public let manifest = PluginManifest(
        name: "payments", version: "0.1.0", dependencies: ["auth"], interface: PaymentsInterface.idl,
        events: PaymentsEvents.all, consumes: [AccountDeleted.self],
        configKeys: [
            "paymentsProducts", "paymentsMeters", "revenuecatWebhookSecret", "stripeWebhookSecrets", "maxWebhookBytes", "revenuecatApiKey",
            "revenuecatApiUrl", "revenuecatCaFile", "appStoreRootCertificates", "appStoreBundleId", "appStoreEnvironments", "appStoreIssuerId", "appStoreKeyId",
            "appStorePrivateKeyFile", "appStoreApiUrl",
            "appStoreCaFile", "googlePlayPackageName", "googlePlayServiceAccountFile", "googlePlayPushAudience", "googlePlayPushServiceAccount",
            "googlePlayApiUrl", "googlePlayKeysUrl", "googlePlayCaFile",
        ])
    public var migrations: [Migration] { PaymentsMigrations.all }

    let options: Options
    let clock: @Sendable () -> WallTime

    /// Made once: its access token and Google's keys are cached across every call and webhook.
    let sharedGooglePlay: GooglePlay?

    public init(options: Options = Options(), clock: @escaping @Sendable () -> WallTime = { .now() }) {
        self.options = options
        self.clock = clock
        sharedGooglePlay = try? Self.googlePlay(options, clock: clock)
    }

    /// The App Store's verifier, when configured; throws when the root certificates cannot be
    /// read (the plugin then does not start: a typo must not leave purchases unverifiable).
    func appStoreVerifier() throws -> AppStoreVerifier? {
        guard let path = options.appStoreRootCertificates else { return nil }
        guard let bundle = options.appStoreBundleID, !bundle.isEmpty else {
            throw PaymentsError.validation("appStoreBundleId", "is required with appStoreRootCertificates (the app's bundle id)")
        }
        do {
            return AppStoreVerifier(roots: try X509Certificate.load(file: path), bundleID: bundle, environments: options.appStoreEnvironments)
        } catch {
            throw PaymentsError.validation("appStoreRootCertificates", "\(error)")
        }
    }

    /// The App Store Server API client, when its key is configured (with the App Store's root).
    func appStoreServerAPI() throws -> AppStoreServerAPI? {
        let parts = [options.appStoreIssuerID, options.appStoreKeyID, options.appStorePrivateKey]
        guard parts.contains(where: { $0 != nil }) else { return nil }
        guard let issuer = options.appStoreIssuerID, let keyID = options.appStoreKeyID, let pem = options.appStorePrivateKey else {
            throw PaymentsError.validation("appStoreIssuerId", "the App Store Server API needs appStoreIssuerId, appStoreKeyId and appStorePrivateKeyFile together")
        }
        guard let bundle = options.appStoreBundleID, options.appStoreRootCertificates != nil else {
            throw PaymentsError.validation("appStoreRootCertificates", "the App Store Server API needs appStoreRootCertificates and appStoreBundleId (its answers are verified)")
        }
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey(pem: pem)
        } catch {
            throw PaymentsError.validation("appStorePrivateKeyFile", "is not a P-256 key in PEM (the .p8 from App Store Connect): \(error)")
        }
        let base = options.appStoreAPIURL ?? (options.appStoreEnvironments.contains("Production") ? AppStoreServerAPI.production : AppStoreServerAPI.sandbox)
        return AppStoreServerAPI(issuerID: issuer, keyID: keyID, key: key, bundleID: bundle, baseURL: base, caFile: options.appStoreCAFile)
    }

    /// Google Play Billing, when configured (package name, service account and push audience).
    static func googlePlay(_ options: Options, clock: @escaping @Sendable () -> WallTime) throws -> GooglePlay? {
        let parts = [options.googlePlayPackageName, options.googlePlayServiceAccount, options.googlePlayPushAudience]
        guard parts.contains(where: { $0 != nil }) else { return nil }
        guard let package = options.googlePlayPackageName, let json = options.googlePlayServiceAccount, let audience = options.googlePlayPushAudience else {
            throw PaymentsError.validation(
                "googlePlayPackageName", "Google Play needs googlePlayPackageName, googlePlayServiceAccountFile and googlePlayPushAudience together")
        }
        let account = try GoogleServiceAccount(json: json)
        return GooglePlay(
            packageName: package,
            api: GooglePlayAPI(
                account: account, packageName: package, baseURL: options.googlePlayAPIURL ?? GooglePlayAPI.defaultURL, caFile: options.googlePlayCAFile,
                clock: clock),
            push: GooglePushVerifier(
                audience: audience, serviceAccount: options.googlePlayPushServiceAccount, keysURL: options.googlePlayKeysURL ?? GooglePushVerifier.defaultKeysURL,
                caFile: options.googlePlayCAFile, clock: clock))
    }

    var providers: [String: any PaymentProvider] {
        var providers: [String: any PaymentProvider] = [:]
        if let verifier = try? appStoreVerifier() { providers["appstore"] = AppStoreProvider(verifier: verifier) }
        if let secret = options.revenueCatSecret, !secret.isEmpty { providers["revenuecat"] = RevenueCatProvider(secret: secret) }
        if !options.stripeSecrets.isEmpty { providers["stripe"] = StripeProvider(secrets: options.stripeSecrets) }
        return providers
    }

    func service(_ context: PluginContext) -> PaymentsService {
        PaymentsService(
            repository: PaymentsRepository(database: context.database), catalog: options.catalog, providers: providers, bus: context.bus,
            revenueCat: options.revenueCatAPIKey.map { RevenueCatAPI(key: $0, baseURL: options.revenueCatAPIURL, caFile: options.revenueCatCAFile) },
            appStore: try? appStoreVerifier(), appStoreAPI: try? appStoreServerAPI(), googlePlay: sharedGooglePlay, clock: clock)
    }

    public func gates(database: any Database) -> [any Gate] {
        [PaywallGate(repository: PaymentsRepository(database: database), catalog: options.catalog, clock: clock, logger: Logger(label: "appd.paywall"))]
    }

    public func start(_ context: PluginContext) async throws {
        _ = try appStoreVerifier()
        _ = try appStoreServerAPI()
        _ = try Self.googlePlay(options, clock: clock)
        let service = service(context)
        let catalog = options.catalog, maxBytes = options.maxWebhookBytes
        let handlers = context.handlers
        handlers.answer(PaymentsInterface.Products.self) { _, _ in
            .init(
                products: catalog.products.map { .init(id: $0.id, entitlement: $0.entitlement, period: $0.period.rawValue) },
                entitlements: catalog.entitlements,
                meters: catalog.meters.map { .init(name: $0.name, limit: $0.limit, period: $0.period.rawValue, entitlement: $0.entitlement) })
        }
        handlers.handle(PaymentsInterface.Status.self) { _, envelope in try await service.status(user: try Self.user(envelope)) }
        handlers.handleInProcess(CheckEntitlement.self) { c, _ in
            .init(entitled: try await service.repository.isEntitled(user: c.userID, entitlement: c.entitlement, now: service.now))
        }
        handlers.handle(PaymentsInterface.Restore.self) { _, envelope in
            .init(entitlements: try await service.restore(user: try Self.user(envelope), causedBy: envelope))
        }
        handlers.handle(PaymentsInterface.SubmitAppStoreTransaction.self) { c, envelope in
            try await service.submitAppStore(user: try Self.user(envelope), signed: c.signedTransaction, causedBy: envelope)
        }
        handlers.handle(PaymentsInterface.AppStoreAccountToken.self) { _, envelope in
            .init(token: try await service.appStoreTokens.token(for: try Self.user(envelope)))
        }
        handlers.handle(PaymentsInterface.SubmitGooglePlayPurchase.self) { c, envelope in
            .init(entitlements: try await service.submitGooglePlay(user: try Self.user(envelope), productID: c.productId, token: c.purchaseToken, causedBy: envelope))
        }
        handlers.handle(PaymentsInterface.Grant.self) { c, envelope in
            .init(
                entitlement: try await service.grant(
                    email: c.email, entitlement: c.entitlement, expiresAt: c.expiresAt, reason: c.reason, actor: Self.actor(envelope), causedBy: envelope))
        }
        handlers.handle(PaymentsInterface.Revoke.self) { c, envelope in
            try await service.revoke(
                email: c.email, entitlement: c.entitlement, reason: c.reason, includePaid: c.includePaid ?? false, actor: Self.actor(envelope), causedBy: envelope)
        }
        handlers.handle(PaymentsInterface.UserStatus.self) { c, _ in
            let user = try await service.accountID(email: c.email)
            let status = try await service.status(user: user)
            return .init(userId: user, entitlements: status.entitlements, meters: status.meters)
        }
        handlers.handle(PaymentsInterface.IngestWebhook.self) { c, envelope in
            guard c.body.utf8.count <= maxBytes else { throw PaymentsError.malformedEvent(reason: "the body is larger than \(maxBytes) bytes") }
            let ingested = try await service.ingest(provider: c.provider, headers: c.headers, body: c.body, causedBy: envelope)
            if let warning = ingested.warning { envelope.logger.warning("webhook event for no account", metadata: ["event.id": ingested.eventId, "reason": warning]) }
            return ingested
        }
        if providers.isEmpty && options.googlePlayPackageName == nil {
            context.logger.info("no payment provider is configured: webhooks are refused until revenuecatWebhookSecret, stripeWebhookSecrets or appStoreRootCertificates is set")
        }
    }

    public func services(_ context: PluginContext) -> [any Service] {
        let service = service(context)
        let repository = service.repository
        var services: [any Service] = [ExpiryService(repository: repository, clock: clock, logger: context.logger)]
        do {
            services.append(
                try DurableConsumer(name: "payments.accountDeleted", consuming: AccountDeleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    deleted, _ in try await repository.eraseUser(deleted.userId)
                })
        } catch {
            services.append(FailedService(name: "payments.accountDeleted", error: error))
        }
        return services
    }

    /// `POST /webhooks/<provider>` on the app-facing HTTP server.
    public func httpRoutes(_ context: PluginContext) -> [PluginHTTPRoute] {
        let ingress = webhooks(context)
        return [PluginHTTPRoute(.prefix("/webhooks/")) { request, body in await ingress.handle(request, body) }]
    }

    /// The webhook ingress (the HTTP route's, and tests').
    public func webhooks(_ context: PluginContext) -> WebhookIngress {
        WebhookIngress(service: service(context), logger: context.logger, maxBodyBytes: options.maxWebhookBytes)
    }

    static func user(_ envelope: Envelope) throws(PaymentsError) -> String {
        try envelope.signedInUser(or: PaymentsError.paymentRequired(entitlement: "", remaining: 0, resetsAt: nil))
    }

    /// Who made an admin change, for the audit trail.
    static func actor(_ envelope: Envelope) -> String {
        envelope.caller.peer.map { "uid=\($0.uid) pid=\($0.pid)" } ?? envelope.caller.plugin.map { "plugin=\($0)" } ?? "daemon"
    }
}
