// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Crypto
import Glibc
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth
@testable import Payments

/// A metered command, as chat's Send is: needs a session and one use of `chat.messages`.
struct MeteredCall: Command {
    static let method = "io.appd.Test.Metered"
    static let requirements: [Requirement] = [.session, .meter("chat.messages")]
    typealias Reply = Empty
    var fail: Bool
}

/// A command only `pro` may call.
struct ProOnly: Command {
    static let method = "io.appd.Test.ProOnly"
    static let requirements: [Requirement] = [.session, .entitlement("pro")]
    typealias Reply = Empty
}

struct Failed: Error {}

typealias Harness = PluginHarness

extension PluginHarness {
    static let rcSecret = "rc-secret-123"
    static let stripeSecrets = ["whsec_old_secret", "whsec_new_secret"]

    /// Auth and payments wired as appd wires them, with an injected clock, and two test
    /// commands behind the paywall.
    static func make(meterLimit: Int = 3, path: String? = nil, clock: TestClock = TestClock()) async throws -> PluginHarness {
        let h = try await make(clock: clock, databasePath: path) { clock in
            // The tests move the clock by days: keep sessions valid through that.
            let auth = try AuthPlugin.testing(clock: clock) { options in
                options.accessTokenLifetime = .seconds(400 * 86_400)
                options.refreshTokenLifetime = .seconds(400 * 86_400)
            }
            var payments = PaymentsPlugin.Options()
            payments.revenueCatSecret = rcSecret
            payments.stripeSecrets = stripeSecrets
            payments.catalog = PaymentsCatalog(meters: [.init(name: "chat.messages", limit: meterLimit, period: .day, entitlement: "pro")])
            payments.appStoreRootCertificates = try AppStorePayloads.rootFile()
            payments.appStoreBundleID = AppStorePayloads.bundle
            return [auth, PaymentsPlugin(options: payments, clock: { clock.now })]
        }
        try h.bus.register(MeteredCall.self) { call, _ in
            if call.fail { throw Failed() }
            return Empty()
        }
        try h.bus.register(ProOnly.self) { _, _ in Empty() }
        return h
    }

    var plugin: PaymentsPlugin { plugin(PaymentsPlugin.self) }
    var path: String { databasePath }

    func status(_ caller: Caller) async throws -> PaymentsInterface.AccountStatus {
        try await bus.send(PaymentsInterface.Status(), as: caller)
    }

    func pro(_ caller: Caller) async throws -> Entitlement? {
        try await status(caller).entitlements.first { $0.name == "pro" }
    }

    /// A RevenueCat delivery with the right Authorization header.
    func revenueCat(_ type: String, id: String, user: String, atMillis: Int64, expiresMillis: Int64? = nil, extra: [String: JSONValue] = [:]) async throws -> Ingested {
        var event: [String: JSONValue] = [
            "id": .string(id), "type": .string(type), "app_user_id": .string(user), "product_id": "pro_monthly", "entitlement_ids": ["pro"],
            "event_timestamp_ms": .int(atMillis),
        ]
        if let expiresMillis { event["expiration_at_ms"] = .int(expiresMillis) }
        for (k, v) in extra { event[k] = v }
        let body = String(decoding: JSONWriter.bytes(["api_version": "1.0", "event": .object(event)]), as: UTF8.self)
        return try await bus.send(PaymentsInterface.IngestWebhook(provider: "revenuecat", headers: ["Authorization": "Bearer \(Self.rcSecret)"], body: body))
    }

    /// A Stripe delivery signed with `secret` at the clock's time.
    func stripe(_ body: String, secret: String = stripeSecrets[1], at timestamp: Int64? = nil) async throws -> Ingested {
        let header = StripeSignature.sign(body: Array(body.utf8), secret: secret, timestamp: timestamp ?? clock.seconds)
        return try await bus.send(PaymentsInterface.IngestWebhook(provider: "stripe", headers: ["Stripe-Signature": header], body: body))
    }

}

func expectPaymentsError(_ kind: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(kind)", sourceLocation: sourceLocation)
    } catch let error as PaymentsError {
        #expect(error.wireName == "io.appd.Payments.\(kind)", "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(kind), got \(error)", sourceLocation: sourceLocation)
    }
}
