// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Glibc
import Storage
import Testing
import TestSupport
@testable import Auth
@testable import Payments

@Suite(.cleansUp) struct WebhookTests {
    let t0: Int64 = 1_800_000_000_000  // ms

    @Test func revenueCatNeedsTheConfiguredAuthorization() async throws {
        let h = try await Harness.make()
        let (_, ada) = try await h.user("ada@example.com", onboarded: false).identity
        let body = #"{"event":{"id":"e1","type":"INITIAL_PURCHASE","app_user_id":"\#(ada)","entitlement_ids":["pro"],"event_timestamp_ms":1}}"#
        for headers in [[:], ["Authorization": "Bearer wrong"], ["Authorization": "rc-secret-12"]] {
            await expectPaymentsError("InvalidSignature") {
                _ = try await h.bus.send(PaymentsInterface.IngestWebhook(provider: "revenuecat", headers: headers, body: body))
            }
        }
        // A forgery changes nothing: not even the event is stored.
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events") == 0)
        await expectPaymentsError("UnknownProvider") {
            _ = try await h.bus.send(PaymentsInterface.IngestWebhook(provider: "paypal", headers: [:], body: body))
        }
        // (The last: a member name twice, hardening finding 12.)
        for bad in [
            "not json", "[]", #"{"event":{"type":"RENEWAL"}}"#, #"{"event":{"id":"x","type":"RENEWAL"}}"#,
            #"{"event":{"id":"e2","type":"INITIAL_PURCHASE","app_user_id":"\#(ada)","app_user_id":"u_other","entitlement_ids":["pro"],"event_timestamp_ms":1}}"#,
        ] {
            await expectPaymentsError("MalformedEvent") {
                _ = try await h.bus.send(PaymentsInterface.IngestWebhook(provider: "revenuecat", headers: ["authorization": Harness.rcSecret], body: bad))
            }
        }
    }

    /// The first hour: an event for an app user id no account has was stored silently.
    @Test func anEventForNoAccountIsStoredAndReported() async throws {
        let h = try await Harness.make()
        let (_, ada) = try await h.user("ada@example.com", onboarded: false).identity
        func body(_ id: String, _ user: String) -> String {
            #"{"event":{"id":"\#(id)","type":"INITIAL_PURCHASE","app_user_id":"\#(user)","entitlement_ids":["pro"],"event_timestamp_ms":1}}"#
        }
        let headers = ["authorization": Harness.rcSecret]
        let stray = try await h.bus.send(PaymentsInterface.IngestWebhook(provider: "revenuecat", headers: headers, body: body("e-stray", "u_nobody")))
        #expect(stray.duplicate == false)
        #expect(stray.warning?.contains("no account has the app user id u_nobody") == true, "\(stray)")
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events") == 1)
        let again = try await h.bus.send(PaymentsInterface.IngestWebhook(provider: "revenuecat", headers: headers, body: body("e-stray", "u_nobody")))
        #expect(again.duplicate && again.warning == nil)
        let real = try await h.bus.send(PaymentsInterface.IngestWebhook(provider: "revenuecat", headers: headers, body: body("e-real", ada)))
        #expect(real.warning == nil)
    }

    @Test func aPurchaseGrantsACancellationOnlyStopsRenewalAndExpirationRevokes() async throws {
        let h = try await Harness.make()
        let (caller, ada) = try await h.user("ada@example.com", onboarded: false).identity
        let events = try h.bus.subscribe("payments.>")
        _ = try await h.revenueCat("INITIAL_PURCHASE", id: "e1", user: ada, atMillis: t0, expiresMillis: t0 + 30 * 86_400_000)
        var pro = try #require(try await h.pro(caller))
        #expect(pro.active && pro.willRenew && pro.source == "revenuecat" && pro.product == "pro_monthly")
        _ = try await h.revenueCat("CANCELLATION", id: "e2", user: ada, atMillis: t0 + 1000, expiresMillis: t0 + 30 * 86_400_000)
        pro = try #require(try await h.pro(caller))
        #expect(pro.active && !pro.willRenew)
        _ = try await h.revenueCat("SUBSCRIPTION_PAUSED", id: "e3", user: ada, atMillis: t0 + 2000)
        #expect(try await h.pro(caller)?.active == true)
        _ = try await h.revenueCat("EXPIRATION", id: "e4", user: ada, atMillis: t0 + 3000)
        pro = try #require(try await h.pro(caller))
        #expect(!pro.active)
        #expect(pro.history.map(\.change) == ["granted", "cancelled", "expired"])
        var changes: [String] = []
        var iterator = events.makeAsyncIterator()
        for _ in 0..<3 { changes.append((try await iterator.next()?.json())?["change"]?.stringValue ?? "") }
        #expect(changes == ["granted", "cancelled", "expired"])
    }

    @Test func aBillingIssuePublishesPurchaseFailedAndKeepsAccess() async throws {
        let h = try await Harness.make()
        let (caller, ada) = try await h.user("ada@example.com", onboarded: false).identity
        _ = try await h.revenueCat("INITIAL_PURCHASE", id: "e1", user: ada, atMillis: t0)
        let failed = try h.bus.subscribe("payments.purchaseFailed")
        _ = try await h.revenueCat("BILLING_ISSUE", id: "e2", user: ada, atMillis: t0 + 1)
        var iterator = failed.makeAsyncIterator()
        #expect((try await iterator.next()?.json())?["userId"]?.stringValue == ada)
        #expect(try await h.pro(caller)?.active == true)
    }

    @Test func duplicatesHaveExactlyOneEffectSequentialOrConcurrent() async throws {
        let h = try await Harness.make()
        let (caller, ada) = try await h.user("ada@example.com", onboarded: false).identity
        let first = try await h.revenueCat("INITIAL_PURCHASE", id: "dup", user: ada, atMillis: t0)
        let second = try await h.revenueCat("INITIAL_PURCHASE", id: "dup", user: ada, atMillis: t0)
        #expect(!first.duplicate && second.duplicate)
        let results = try await withThrowingTaskGroup(of: Ingested.self) { group in
            for _ in 0..<8 { group.addTask { try await h.revenueCat("RENEWAL", id: "same", user: ada, atMillis: t0 + 5) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { !$0.duplicate }.count == 1)
        #expect(try await h.pro(caller)?.history.map(\.change) == ["granted", "renewed"])
        #expect(try await h.count("SELECT COUNT(*) AS n FROM appd_events WHERE topic = 'payments.entitlementChanged'") == 2)
    }

    @Test func aLateOlderEventNeverOverridesNewerState() async throws {
        let h = try await Harness.make()
        let (caller, ada) = try await h.user("ada@example.com", onboarded: false).identity
        _ = try await h.revenueCat("RENEWAL", id: "new", user: ada, atMillis: t0 + 10_000, expiresMillis: t0 + 40 * 86_400_000)
        _ = try await h.revenueCat("EXPIRATION", id: "old", user: ada, atMillis: t0)  // delivered late
        let pro = try #require(try await h.pro(caller))
        #expect(pro.active)
        #expect(pro.expiresAt == WallTime(nanosecondsSinceEpoch: (t0 + 40 * 86_400_000) * 1_000_000).rfc3339)
    }

    @Test func stripeCheckoutThenSubscriptionEventsFollowTheCustomer() async throws {
        let h = try await Harness.make()
        let (caller, ada) = try await h.user("ada@example.com", onboarded: false).identity
        let now = h.clock.seconds
        _ = try await h.stripe(
            #"{"id":"evt_1","type":"checkout.session.completed","created":\#(now),"data":{"object":{"client_reference_id":"\#(ada)","customer":"cus_1","mode":"subscription"}}}"#)
        #expect(try await h.pro(caller)?.active == false)
        let subscription = { (event: String, type: String, status: String, cancel: Bool, created: Int64) in
            #"{"id":"\#(event)","type":"\#(type)","created":\#(created),"data":{"object":{"customer":"cus_1","status":"\#(status)","cancel_at_period_end":\#(cancel),"curr"#
                + #"ent_period_end":\#(now + 86_400 * 30),"items":{"data":[{"price":{"id":"price_123","lookup_key":"pro_monthly"}}]}}}}"#
        }
        _ = try await h.stripe(subscription("evt_2", "customer.subscription.created", "active", false, now + 1), secret: Harness.stripeSecrets[0])
        var pro = try #require(try await h.pro(caller))
        #expect(pro.active && pro.willRenew && pro.source == "stripe")
        _ = try await h.stripe(subscription("evt_3", "customer.subscription.updated", "active", true, now + 2))
        pro = try #require(try await h.pro(caller))
        #expect(pro.active && !pro.willRenew)
        _ = try await h.stripe(subscription("evt_4", "customer.subscription.deleted", "canceled", true, now + 3))
        #expect(try await h.pro(caller)?.active == false)
        // A forged delivery (signed with another secret) is refused and stores nothing.
        await expectPaymentsError("InvalidSignature") {
            _ = try await h.stripe(subscription("evt_5", "customer.subscription.created", "active", false, now + 4), secret: "whsec_attacker")
        }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events WHERE provider = 'stripe'") == 4)
    }

    @Test func aTransferMovesTheEntitlement() async throws {
        let h = try await Harness.make()
        let (adaCaller, ada) = try await h.user("ada@example.com", onboarded: false).identity
        let (bobCaller, bob) = try await h.user("bob@example.com", onboarded: false).identity
        _ = try await h.revenueCat("INITIAL_PURCHASE", id: "e1", user: ada, atMillis: t0)
        _ = try await h.revenueCat("TRANSFER", id: "e2", user: ada, atMillis: t0 + 1, extra: ["transferred_from": [.string(ada)], "transferred_to": [.string(bob)]])
        #expect(try await h.pro(adaCaller)?.active == false)
        #expect(try await h.pro(bobCaller)?.active == true)
    }
}

@Suite(.cleansUp) struct GrantsAndExpiryTests {
    @Test func grantAndRevokeAreAdminOnlyAndAudited() async throws {
        let h = try await Harness.make()
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        do {
            _ = try await h.bus.send(
                PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: nil, reason: "x"), as: Caller(peer: PeerCredentials(uid: 4242, gid: 4242, pid: 1)))
            Issue.record("a non-admin granted")
        } catch {}
        await expectPaymentsError("ValidationFailed") {
            _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: nil, reason: " "), as: h.admin)
        }
        await expectPaymentsError("UnknownEntitlement") {
            _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "gold", expiresAt: nil, reason: "r"), as: h.admin)
        }
        await expectPaymentsError("UnknownAccount") {
            _ = try await h.bus.send(PaymentsInterface.Grant(email: "nobody@example.com", entitlement: "pro", expiresAt: nil, reason: "r"), as: h.admin)
        }
        let granted = try await h.bus.send(PaymentsInterface.Grant(email: "ADA@example.com", entitlement: "pro", expiresAt: nil, reason: "beta tester"), as: h.admin)
        #expect(granted.entitlement.active && granted.entitlement.source == "admin" && granted.entitlement.expiresAt == nil)
        _ = try await h.bus.send(ProOnly(), as: caller)
        let revoked = try await h.bus.send(PaymentsInterface.Revoke(email: "ada@example.com", entitlement: "pro", reason: "beta over", includePaid: nil), as: h.admin)
        #expect(!revoked.entitlement.active)
        await expectPaymentsError("PaymentRequired") { _ = try await h.bus.send(ProOnly(), as: caller) }
        let audit = try await h.database.read { try $0.query("SELECT action, reason, actor FROM payments_grants ORDER BY seq") }
        #expect(audit.map { $0.text("action") } == ["grant", "revoke"])
        #expect(audit.map { $0.text("reason") } == ["beta tester", "beta over"])
        #expect(audit.allSatisfy { $0.text("actor")?.hasPrefix("uid=\(getuid())") == true })
        #expect(revoked.entitlement.history.map(\.change) == ["granted", "revoked"])
    }

    /// Issue 35 item 3: revoking ends an administrator's grant, not what the user pays for,
    /// unless asked to, and says which it ended; a later restore agrees.
    @Test func revokeEndsTheAdminGrantAndAPaidSourceOnlyWhenAskedAndSaysWhich() async throws {
        let h = try await Harness.make()
        let (caller, userID) = try await h.user("ada@example.com", onboarded: false).identity
        let now = h.clock.now.nanosecondsSinceEpoch / 1_000_000
        _ = try await h.revenueCat("INITIAL_PURCHASE", id: "rc-1", user: userID, atMillis: now - 1000, expiresMillis: now + 86_400_000)
        _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: nil, reason: "beta tester"), as: h.admin)
        let first = try await h.bus.send(PaymentsInterface.Revoke(email: "ada@example.com", entitlement: "pro", reason: "beta over", includePaid: nil), as: h.admin)
        #expect(first.revoked == ["admin"])
        #expect(first.entitlement.active, "the paid subscription still grants it")
        _ = try await h.bus.send(ProOnly(), as: caller)
        let again = try await h.bus.send(PaymentsInterface.Revoke(email: "ada@example.com", entitlement: "pro", reason: "twice", includePaid: false), as: h.admin)
        #expect(again.revoked.isEmpty && again.entitlement.active)
        // A restore replays the audit trail the same way: the paid source stays.
        _ = try await h.bus.send(PaymentsInterface.Restore(), as: caller)
        #expect(try await h.pro(caller)?.active == true)
        let paid = try await h.bus.send(PaymentsInterface.Revoke(email: "ada@example.com", entitlement: "pro", reason: "refunded by hand", includePaid: true), as: h.admin)
        #expect(paid.revoked == ["revenuecat"] && !paid.entitlement.active)
        await expectPaymentsError("PaymentRequired") { _ = try await h.bus.send(ProOnly(), as: caller) }
        _ = try await h.bus.send(PaymentsInterface.Restore(), as: caller)
        #expect(try await h.pro(caller)?.active != true, "the restore replays the revoke of every source")
        let scopes = try await h.database.read { try $0.query("SELECT scope FROM payments_grants WHERE action = 'revoke' ORDER BY seq") }.compactMap { $0.text("scope") }
        #expect(scopes == ["admin", "admin", "all"])
    }

    @Test func entitlementsExpireOnTimeAndThePaywallAgreesAtOnce() async throws {
        let h = try await Harness.make()
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        let until = WallTime(nanosecondsSinceEpoch: h.clock.now.nanosecondsSinceEpoch + 3_600_000_000_000).rfc3339
        // Subscribed before the grant: on PostgreSQL events reach subscribers through the feed, so a
        // subscription opened after the grant's reply may still see the grant's event arrive.
        let events = try h.bus.subscribe("payments.entitlementChanged")
        var iterator = events.makeAsyncIterator()
        _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: until, reason: "trial"), as: h.admin)
        #expect((try await iterator.next()?.json())?["change"]?.stringValue == "granted")
        let expiry = ExpiryService(repository: PaymentsRepository(database: h.database), clock: { h.clock.now }, logger: h.context.logger)
        #expect(try await expiry.expireDue() != nil)
        _ = try await h.bus.send(ProOnly(), as: caller)
        h.clock.advance(seconds: 3599)
        _ = try await expiry.expireDue()
        _ = try await h.bus.send(ProOnly(), as: caller)
        h.clock.advance(seconds: 1)
        // Lapsed: denied even before the expiry service has run.
        await expectPaymentsError("PaymentRequired") { _ = try await h.bus.send(ProOnly(), as: caller) }
        #expect(try await expiry.expireDue() == nil)
        #expect((try await iterator.next()?.json())?["change"]?.stringValue == "expired")
        #expect(try await h.pro(caller)?.history.map(\.change) == ["granted", "expired"])
        await expectPaymentsError("ValidationFailed") {
            _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: "2001-01-01T00:00:00Z", reason: "r"), as: h.admin)
        }
    }

    @Test func everythingSurvivesARestartAndRestoreRecomputes() async throws {
        let clock = TestClock()
        var h = try await Harness.make(clock: clock)
        let (_, ada) = try await h.user("ada@example.com", onboarded: false).identity
        _ = try await h.revenueCat("INITIAL_PURCHASE", id: "e1", user: ada, atMillis: clock.now.nanosecondsSinceEpoch / 1_000_000)
        _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: nil, reason: "vip"), as: h.admin)
        let before = try await h.bus.send(PaymentsInterface.UserStatus(email: "ada@example.com"), as: h.admin)
        await h.database.close()

        h = try await Harness.make(path: h.path, clock: clock)
        let session = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "password for ada@example.com")).session
        let caller = Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 1), connection: ConnectionContext(id: 7, peer: nil))
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        let after = try await h.bus.send(PaymentsInterface.UserStatus(email: "ada@example.com"), as: h.admin)
        #expect(after.entitlements == before.entitlements)
        // Lose the derived state; Restore rebuilds it from the stored events and grants.
        _ = try await h.database.write { try $0.execute("DELETE FROM payments_entitlements") }
        #expect(try await h.pro(caller)?.active == false)
        let restored = try await h.bus.send(PaymentsInterface.Restore(), as: caller)
        #expect(restored.entitlements.first { $0.name == "pro" }?.active == true)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_entitlements WHERE source IN ('admin', 'revenuecat') AND active = 1") == 2)
    }

    @Test func deletingTheAccountErasesPaymentDataButKeepsTheAuditTrail() async throws {
        let h = try await Harness.make()
        let (caller, ada) = try await h.user("ada@example.com", onboarded: false).identity
        _ = try await h.revenueCat("INITIAL_PURCHASE", id: "e1", user: ada, atMillis: 1)
        _ = try await h.bus.send(MeteredCall(fail: false), as: caller)
        let services = h.plugin.services(h.context)
        let consumer = try #require(services.first { $0.name == "payments.accountDeleted" })
        let running = Task { try await consumer.run() }
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: caller)
        var left = -1
        for _ in 0..<300 where left != 0 {
            try await Task.sleep(for: .milliseconds(10))
            left = try await h.count("SELECT (SELECT COUNT(*) FROM payments_entitlements) + (SELECT COUNT(*) FROM payments_meters) AS n")
        }
        #expect(left == 0)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events") == 1)
        running.cancel()
    }
}

@Suite(.cleansUp) struct PaywallTests {
    @Test func theMeterDeniesAfterExactlyNUsesAndSaysWhenItResets() async throws {
        let h = try await Harness.make(meterLimit: 3)
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        for _ in 0..<3 { _ = try await h.bus.send(MeteredCall(fail: false), as: caller) }
        do {
            _ = try await h.bus.send(MeteredCall(fail: false), as: caller)
            Issue.record("a fourth use passed")
        } catch let error as PaymentsError {
            let day = CalendarPeriod.day.bounds(containing: h.clock.now)
            #expect(error == .paymentRequired(entitlement: "pro", remaining: 0, resetsAt: day.end.rfc3339), "\(error)")
        }
        let meter = try #require(try await h.status(caller).meters.first)
        #expect(meter.used == 3 && meter.limit == 3 && !meter.unlimited)
        // The next day the quota is back.
        h.clock.advance(seconds: 86_400)
        _ = try await h.bus.send(MeteredCall(fail: false), as: caller)
    }

    @Test func failedCommandsDoNotConsumeTheQuota() async throws {
        let h = try await Harness.make(meterLimit: 2)
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        for _ in 0..<5 { await #expect(throws: Failed.self) { _ = try await h.bus.send(MeteredCall(fail: true), as: caller) } }
        _ = try await h.bus.send(MeteredCall(fail: false), as: caller)
        _ = try await h.bus.send(MeteredCall(fail: false), as: caller)
        await expectPaymentsError("PaymentRequired") { _ = try await h.bus.send(MeteredCall(fail: false), as: caller) }
    }

    @Test func aConcurrentPairWithOneUseLeftLetsExactlyOneThrough() async throws {
        let h = try await Harness.make(meterLimit: 1)
        for round in 0..<5 {
            let (caller, _) = try await h.user("user\(round)@example.com", onboarded: false).identity
            let passed = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<2 { group.addTask { (try? await h.bus.send(MeteredCall(fail: false), as: caller)) != nil } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(passed == 1)
        }
    }

    @Test func proLiftsTheQuotaAndEntitlementCommandsNeedIt() async throws {
        let h = try await Harness.make(meterLimit: 1)
        let (caller, _) = try await h.user("ada@example.com", onboarded: false).identity
        _ = try await h.bus.send(MeteredCall(fail: false), as: caller)
        await expectPaymentsError("PaymentRequired") { _ = try await h.bus.send(MeteredCall(fail: false), as: caller) }
        await expectPaymentsError("PaymentRequired") { _ = try await h.bus.send(ProOnly(), as: caller) }
        _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: nil, reason: "r"), as: h.admin)
        for _ in 0..<5 { _ = try await h.bus.send(MeteredCall(fail: false), as: caller) }
        _ = try await h.bus.send(ProOnly(), as: caller)
        #expect(try await h.status(caller).meters.first?.unlimited == true)
    }

    @Test func withoutThePaymentsPluginMeteredCommandsAreDenied() async throws {
        // Fail closed: no paywall gate installed → the requirement is uncovered.
        let bus = EventBus(gates: [AdminGate()])
        try bus.register(MeteredCall.self) { _, _ in Empty() }
        await #expect(throws: RequirementUnavailable.self) { _ = try await bus.send(MeteredCall(fail: false)) }
    }
}

@Suite(.cleansUp) struct CatalogTests {
    @Test func productsAndMetersParseOrSayWhatIsExpected() throws {
        let products = try PaymentsCatalog.parseProducts("pro_m=pro/month, life=pro/lifetime")
        #expect(products == [.init(id: "pro_m", entitlement: "pro", period: .month), .init(id: "life", entitlement: "pro", period: .lifetime)])
        let meters = try PaymentsCatalog.parseMeters("chat.messages=10/day/pro")
        #expect(meters == [.init(name: "chat.messages", limit: 10, period: .day, entitlement: "pro")])
        for bad in ["x", "=pro/month", "a=pro", "a=pro/fortnight"] { #expect(throws: CatalogProblem.self) { try PaymentsCatalog.parseProducts(bad) } }
        for bad in ["m=ten/day/pro", "m=1/lifetime/pro", "m=1/day", "m=-1/day/pro"] { #expect(throws: CatalogProblem.self) { try PaymentsCatalog.parseMeters(bad) } }
    }

    @Test func calendarPeriodsAreUTCWindows() throws {
        let t = try #require(RFC3339.parse("2026-11-30T15:20:00Z"))  // a Monday
        #expect(CalendarPeriod.day.bounds(containing: t).start.rfc3339 == "2026-11-30T00:00:00.000Z")
        #expect(CalendarPeriod.week.bounds(containing: t).start.rfc3339 == "2026-11-30T00:00:00.000Z")
        #expect(CalendarPeriod.week.bounds(containing: t).end.rfc3339 == "2026-12-07T00:00:00.000Z")
        #expect(CalendarPeriod.month.bounds(containing: t).end.rfc3339 == "2026-12-01T00:00:00.000Z")
        #expect(CalendarPeriod.year.bounds(containing: t).end.rfc3339 == "2027-01-01T00:00:00.000Z")
        let sunday = try #require(RFC3339.parse("2026-12-06T23:59:59Z"))
        #expect(CalendarPeriod.week.bounds(containing: sunday).start.rfc3339 == "2026-11-30T00:00:00.000Z")
        let december = try #require(RFC3339.parse("2026-12-31T23:00:00Z"))
        #expect(CalendarPeriod.month.bounds(containing: december).end.rfc3339 == "2027-01-01T00:00:00.000Z")
    }
}
