// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage

/// The payments rules: webhook verification and ingestion, grants, status, meters.
struct PaymentsService: Sendable {
    let repository: PaymentsRepository
    let catalog: PaymentsCatalog
    let providers: [String: any PaymentProvider]
    let bus: EventBus
    /// RevenueCat's REST API, for "Restore purchases" (nil: restore only recomputes).
    var revenueCat: RevenueCatAPI?
    /// The App Store's signatures (nil: App Store purchases are refused).
    var appStore: AppStoreVerifier?
    /// The App Store Server API, for "Restore purchases" (nil: restore only recomputes).
    var appStoreAPI: AppStoreServerAPI?
    /// Google Play Billing (nil: Google Play purchases are refused).
    var googlePlay: GooglePlay?
    var appStoreTokens: AppStoreAccountTokens { AppStoreAccountTokens(database: repository.database) }
    let clock: @Sendable () -> WallTime

    var now: Int64 { clock().nanosecondsSinceEpoch }

    /// Verifies, decodes, resolves and stores one delivery. A forgery throws before anything is stored.
    func ingest(provider name: String, headers: [String: String], body: String, causedBy cause: (any Cause)? = nil) async throws -> Ingested {
        let lowered = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        if name.lowercased() == "googleplay" { return try await ingestGooglePlay(headers: lowered, body: body, causedBy: cause) }
        guard let provider = providers[name.lowercased()] else { throw PaymentsError.unknownProvider(provider: name) }
        let bytes = Array(body.utf8)
        try provider.verify(headers: lowered, body: bytes, now: clock())
        let event = try provider.decode(bytes, catalog: catalog)
        var accounts = ResolvedAccounts()
        var unknown: [String] = []
        func resolve(_ id: String) async throws -> String? {
            let found = try await account(id)
            if found == nil { unknown.append(id) }
            return found
        }
        switch event.subject {
        case .appUser(let id): accounts.subject = try await resolve(id)
        case .customer(_, let user?): accounts.subject = try await resolve(user)
        case .storePurchase(_, let token?):
            accounts.subject = try await appStoreTokens.user(token: token)
            if accounts.subject == nil { unknown.append("appAccountToken \(token)") }
        case .customer(_, nil), .storePurchase(_, nil), .none: break
        }
        for action in event.actions {
            if case .transfer(let from, let to, _, _, _) = action {
                accounts.subject = nil
                unknown = []
                for id in from { if let user = try await resolve(id) { accounts.from.append(user) } }
                for id in to { if let user = try await resolve(id) { accounts.to.append(user) } }
            }
        }
        var ingested = try await repository.ingest(event, body: body, accounts: accounts, now: now, causedBy: cause)
        if !ingested.duplicate, !unknown.isEmpty {
            ingested.warning =
                "no account has the app user id \(unknown.joined(separator: ", ")): the event is stored but changed no entitlement; "
                + "check the id the provider sends (appctl --json whoami shows yours)"
        }
        return ingested
    }

    /// StoreKit 2: verifies a signed transaction the signed-in `user`'s app sent and applies it
    /// like a provider event (`transaction:<id>:<signedDate>`: the same signed transaction
    /// again is a duplicate, a later signing of it — refunded, renewed — is applied in order).
    func submitAppStore(user: String, signed: String, causedBy cause: (any Cause)?) async throws -> PaymentsInterface.SubmitAppStoreTransaction.Reply {
        guard let appStore else {
            throw PaymentsError.unknownProvider(provider: "appstore")
        }
        let transaction = try appStore.transaction(signed, now: clock())
        if let token = transaction.appAccountToken, try await appStoreTokens.user(token: token) != user {
            throw PaymentsError.foreignTransaction(reason: "its appAccountToken is not this account's (ask AppStoreAccountToken and pass it to StoreKit)")
        }
        let event = try transaction.submitted(catalog)
        var accounts = ResolvedAccounts()
        accounts.subject = user
        _ = try await repository.ingest(event, body: signed, accounts: accounts, exclusive: true, now: now, causedBy: cause)
        return .init(
            transactionId: transaction.transactionID, productId: transaction.productID,
            entitlements: try await repository.entitlements(user: user, now: now))
    }

    /// A Google Play real-time developer notification (a Pub/Sub push): the push's token checked,
    /// the purchase asked of the Play Developer API, stored once per Pub/Sub message id and
    /// applied to the account its `obfuscatedAccountId` names or that submitted it; a new
    /// purchase is acknowledged.
    func ingestGooglePlay(headers: [String: String], body: String, causedBy cause: (any Cause)?) async throws -> Ingested {
        guard let googlePlay else { throw PaymentsError.unknownProvider(provider: "googleplay") }
        try await googlePlay.push.verify(authorization: headers["authorization"])
        let notification = try GooglePlayNotification(Array(body.utf8))
        guard notification.packageName == googlePlay.packageName else {
            throw PaymentsError.malformedEvent(reason: "the notification is for \(notification.packageName), not \(googlePlay.packageName) (googlePlayPackageName)")
        }
        let record: GooglePlayRecord
        switch notification.kind {
        case .test:
            let event = ProviderEvent(provider: "googleplay", id: notification.messageID, type: "TEST", time: now, subject: .none, actions: [])
            return try await repository.ingest(event, body: body, accounts: ResolvedAccounts(), now: now, causedBy: cause)
        case .subscription(let type, let token, let product):
            record = try await googlePlay.record(
                id: GooglePlayRecord.tag(token) + ":" + notification.messageID, type: GooglePlayNotification.subscriptionType(type), token: token,
                productID: product, subscription: true, now: now)
        case .oneTimeProduct(let type, let token, let product):
            record = try await googlePlay.record(
                id: GooglePlayRecord.tag(token) + ":" + notification.messageID, type: type == 2 ? "ONE_TIME_PRODUCT_CANCELED" : "ONE_TIME_PRODUCT_PURCHASED",
                token: token, productID: product, subscription: false, now: now)
        case .voided(let token, let subscription):
            // The notification does not name the product: the purchase's earlier record does.
            guard let earlier = try await repository.googlePlayRecord(tag: GooglePlayRecord.tag(token)) else {
                let event = ProviderEvent(provider: "googleplay", id: notification.messageID, type: "VOIDED", time: now, subject: .none, actions: [])
                var ingested = try await repository.ingest(event, body: body, accounts: ResolvedAccounts(), now: now, causedBy: cause)
                ingested.warning = "a voided purchase appd never saw: stored, no entitlement changed"
                return ingested
            }
            record = try await googlePlay.record(
                id: GooglePlayRecord.tag(token) + ":" + notification.messageID, type: "VOIDED", token: token, productID: earlier.productID,
                subscription: subscription || earlier.subscription, voided: true, now: now)
        }
        return try await applyGooglePlay(record, user: nil, causedBy: cause)
    }

    /// Google Play Billing: the app's purchase (its product id and purchase token) asked of the
    /// Play Developer API and applied to the signed-in `user`'s entitlements; acknowledged.
    func submitGooglePlay(user: String, productID: String, token: String, causedBy cause: (any Cause)?) async throws -> [Entitlement] {
        guard let googlePlay else { throw PaymentsError.unknownProvider(provider: "googleplay") }
        guard !token.isEmpty, token.utf8.count <= 4096 else { throw PaymentsError.validation("purchaseToken", "is 1 to 4096 bytes") }
        guard catalog.product(productID) != nil else {
            throw PaymentsError.validation("productId", "'\(productID)' is not a configured product (paymentsProducts); add it with its entitlement")
        }
        let now = self.now
        var record = try await googlePlay.record(
            id: "", type: "SUBMITTED", token: token, productID: productID, subscription: GooglePlay.isSubscription(productID, catalog), now: now)
        guard record.purchase != nil else { throw PaymentsError.validation("purchaseToken", "Google Play knows no such purchase of \(productID)") }
        record.id = record.stateID
        if let owner = record.accountToken, try await appStoreTokens.user(token: owner) != user {
            throw PaymentsError.foreignTransaction(reason: "its obfuscatedAccountId is not this account's (ask AppStoreAccountToken and pass it to BillingFlowParams)")
        }
        _ = try await applyGooglePlay(record, user: user, causedBy: cause)
        return try await repository.entitlements(user: user, now: now)
    }

    /// Stores and applies a Google Play record (to `user`, an app's submission, or to the account
    /// the purchase names), then acknowledges a purchase Google still waits on. A state asked for
    /// (`user` set) of a purchase already this user's, that does to the entitlement what its
    /// latest record did, is not stored again: submitting or restoring it twice changes nothing.
    private func applyGooglePlay(_ record: GooglePlayRecord, user: String?, causedBy cause: (any Cause)?) async throws -> Ingested {
        if let user, let latest = try await repository.googlePlayRecord(tag: GooglePlayRecord.tag(record.purchaseToken)),
            latest.voided == record.voided, latest.actions(catalog) == record.actions(catalog),
            try await repository.storePurchaseOwner(provider: "googleplay", id: record.purchaseToken) == user
        {
            try await acknowledgeIfNeeded(record)
            return Ingested(eventId: latest.id, duplicate: true)
        }
        var accounts = ResolvedAccounts()
        var warning: String?
        if let user {
            accounts.subject = user
        } else if let token = record.accountToken {
            accounts.subject = try await appStoreTokens.user(token: token)
            if accounts.subject == nil { warning = "no account has the obfuscatedAccountId \(token): stored, no entitlement changed" }
        }
        var ingested = try await repository.ingest(
            record.event(catalog), body: record.json, accounts: accounts, exclusive: user != nil, now: now, causedBy: cause)
        if !ingested.duplicate, ingested.warning == nil { ingested.warning = warning }
        if accounts.subject != nil || user != nil { try await acknowledgeIfNeeded(record) }
        return ingested
    }

    /// Acknowledges a purchase Google still waits on. Best effort: a failure is logged; the next
    /// notification, submission or restore tries again (Google refunds a purchase left
    /// unacknowledged for three days).
    private func acknowledgeIfNeeded(_ record: GooglePlayRecord) async throws {
        guard record.needsAcknowledgement, let googlePlay else { return }
        do {
            try await googlePlay.api.acknowledge(productID: record.productID, token: record.purchaseToken, subscription: record.subscription)
        } catch {
            Logger(label: "appd.payments").warning("could not acknowledge a Google Play purchase", metadata: ["error": "\(error)", "product": record.productID])
        }
    }

    /// An app user id or email → the account's id (nil when there is no such account).
    func account(_ idOrEmail: String) async throws -> String? {
        let found = try await bus.send(
            LookupAccount(email: idOrEmail.contains("@") ? idOrEmail : nil, userID: idOrEmail.contains("@") ? nil : idOrEmail),
            as: .plugin("payments"))
        return found.userID
    }

    func accountID(email: String) async throws -> String {
        guard let id = try await bus.send(LookupAccount(email: email), as: .plugin("payments")).userID else { throw PaymentsError.unknownAccount(email: email) }
        return id
    }

    func checkEntitlement(_ name: String) throws(PaymentsError) {
        guard catalog.entitlements.contains(name) else { throw .unknownEntitlement(entitlement: name) }
    }

    func grant(email: String, entitlement: String, expiresAt: String?, reason: String, actor: String, causedBy cause: (any Cause)?) async throws -> Entitlement {
        try checkEntitlement(entitlement)
        let reason = try Self.reason(reason)
        var expires: Int64?
        if let expiresAt, !expiresAt.isEmpty {
            guard let time = RFC3339.parse(expiresAt) else { throw PaymentsError.validation("expiresAt", "needs an RFC 3339 time like 2027-01-01T00:00:00Z") }
            guard time.nanosecondsSinceEpoch > now else { throw PaymentsError.validation("expiresAt", "is in the past") }
            expires = time.nanosecondsSinceEpoch
        }
        let user = try await accountID(email: email)
        try await repository.grant(user: user, entitlement: entitlement, expiresAt: expires, reason: reason, actor: actor, now: now, causedBy: cause)
        return try await current(user: user, entitlement)
    }

    /// Ends an administrator's grant; provider-paid sources only with `includePaid`. The reply
    /// says which sources it ended, and the entitlement as it stands after (still active when a
    /// paid source remains).
    func revoke(
        email: String, entitlement: String, reason: String, includePaid: Bool, actor: String, causedBy cause: (any Cause)?
    ) async throws
        -> PaymentsInterface.RevokeReply
    {
        try checkEntitlement(entitlement)
        let reason = try Self.reason(reason)
        let user = try await accountID(email: email)
        let ended = try await repository.revoke(
            user: user, entitlement: entitlement, reason: reason, actor: actor, includePaid: includePaid, now: now, causedBy: cause)
        return .init(entitlement: try await current(user: user, entitlement), revoked: ended)
    }

    static func reason(_ raw: String) throws(PaymentsError) -> String {
        let reason = raw.trimmingWhitespace()
        guard !reason.isEmpty else { throw .validation("reason", "is required (it goes into the audit trail)") }
        if let problem = TextLimit(characters: 500).violation(of: reason) { throw .validation("reason", problem) }
        return reason
    }

    func current(user: String, _ name: String) async throws -> Entitlement {
        try await repository.entitlements(user: user, now: now).first { $0.name == name }
            ?? Entitlement(name: name, active: false, source: nil, product: nil, expiresAt: nil, willRenew: false, history: [])
    }

    /// Every configured entitlement (inactive ones too) and every meter.
    func status(user: String) async throws -> PaymentsInterface.AccountStatus {
        let now = self.now
        let held = try await repository.entitlements(user: user, now: now)
        var entitlements = held
        for name in catalog.entitlements where !held.contains(where: { $0.name == name }) {
            entitlements.append(Entitlement(name: name, active: false, source: nil, product: nil, expiresAt: nil, willRenew: false, history: []))
        }
        var meters: [Meter] = []
        for meter in catalog.meters {
            let window = Self.window(meter, now: now)
            let unlimited = entitlements.contains { $0.name == meter.entitlement && $0.active }
            let used = try await repository.used(user: user, meter: meter.name, periodStart: window.start)
            meters.append(
                Meter(
                    name: meter.name, entitlement: meter.entitlement, unlimited: unlimited, used: used, limit: meter.limit,
                    resetsAt: WallTime(nanosecondsSinceEpoch: window.end).rfc3339))
        }
        return .init(entitlements: entitlements.sorted { $0.name < $1.name }, meters: meters)
    }

    func restore(user: String, causedBy cause: (any Cause)? = nil) async throws -> [Entitlement] {
        if let revenueCat {
            // What RevenueCat knows now, stored and applied as a webhook event would be.
            let body = try await revenueCat.subscriber(user)
            let snapshot = try RevenueCatSubscriber.decode(try parseWebhookJSON(Array(body.utf8)))
            _ = try await repository.ingest(snapshot, body: body, accounts: ResolvedAccounts(subject: user), now: now, causedBy: cause)
        }
        if let appStoreAPI, let appStore {
            // Each App Store purchase the account holds, as the App Store's history has it now
            // (renewals, refunds): every signed transaction verified first, then each stored and
            // applied as a submitted one (once per signing, in signed order).
            var events: [(ProviderEvent, String)] = []
            for original in try await repository.appStorePurchases(user: user) {
                guard let history = try await appStoreAPI.history(of: original, now: clock) else { continue }
                for signed in history {
                    let transaction = try appStore.transaction(signed, now: clock())
                    // A product appd does not sell (a consumable, an old product) grants nothing.
                    guard let event = try? transaction.submitted(catalog) else { continue }
                    events.append((event, signed))
                }
            }
            for (event, signed) in events {
                _ = try await repository.ingest(event, body: signed, accounts: ResolvedAccounts(subject: user), exclusive: true, now: now, causedBy: cause)
            }
        }
        if let googlePlay {
            // Each Google Play purchase the account holds, as Google reports it now (a renewal
            // or a cancellation whose notification never came), applied like a submission.
            for token in try await repository.storePurchases(user: user, provider: "googleplay") {
                guard let earlier = try await repository.googlePlayRecord(tag: GooglePlayRecord.tag(token)) else { continue }
                var record = try await googlePlay.record(
                    id: "", type: "RESTORED", token: token, productID: earlier.productID, subscription: earlier.subscription, now: now)
                guard record.purchase != nil else { continue }
                record.id = record.stateID
                _ = try await applyGooglePlay(record, user: user, causedBy: cause)
            }
        }
        // Stored events decode without the secrets (they were verified when they arrived), so
        // events from a provider that is no longer configured still count.
        let catalog = self.catalog
        let providers: [String: any PaymentProvider] = [
            "revenuecat": RevenueCatProvider(secret: ""), "stripe": StripeProvider(secrets: []), "appstore": AppStoreProvider(verifier: nil),
            "googleplay": GooglePlayStored(),
        ]
        try await repository.restore(
            user: user,
            decode: { provider, body in try? providers[provider]?.decode(Array(body.utf8), catalog: catalog) },
            now: now)
        return try await status(user: user).entitlements
    }

    /// The quota window a meter is in at `now`.
    static func window(_ meter: PaymentsCatalog.Meter, now: Int64) -> (start: Int64, end: Int64) {
        let period = CalendarPeriod(rawValue: meter.period.rawValue) ?? .day
        let bounds = period.bounds(containing: WallTime(nanosecondsSinceEpoch: now))
        return (bounds.start.nanosecondsSinceEpoch, bounds.end.nanosecondsSinceEpoch)
    }
}
