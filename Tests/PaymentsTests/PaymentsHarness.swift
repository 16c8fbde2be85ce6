import Bus
import Crypto
import Glibc
import PluginKit
import Storage
import Synchronization
import Testing
@testable import Auth
@testable import Payments

final class TestClock: Sendable {
    private let value = Mutex(WallTime(nanosecondsSinceEpoch: 1_800_000_000_000_000_000))
    var now: WallTime { value.withLock { $0 } }
    var seconds: Int64 { now.nanosecondsSinceEpoch / 1_000_000_000 }
    func advance(seconds: Int64) { value.withLock { $0.nanosecondsSinceEpoch += seconds * 1_000_000_000 } }
}

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

/// Auth and payments wired as appd wires them, with an injected clock.
struct Harness {
    static let rcSecret = "rc-secret-123"
    static let stripeSecrets = ["whsec_old_secret", "whsec_new_secret"]

    let bus: EventBus
    let database: SQLiteDatabase
    let context: PluginContext
    let plugin: PaymentsPlugin
    let clock: TestClock
    let path: String

    static func make(meterLimit: Int = 3, path: String? = nil, clock: TestClock = TestClock()) async throws -> Harness {
        var template = Array("/tmp/appd-payments-XXXXXX".utf8CString)
        let dir = mkdtemp(&template).map { String(cString: $0) } ?? "/tmp"
        let path = path ?? dir + "/appd.db"
        var options = AuthService.Options()
        options.scrypt = Scrypt.Parameters(logN: 10, r: 8, p: 1)
        // The tests move the clock by days: keep sessions valid through that.
        options.accessTokenLifetime = .seconds(400 * 86_400)
        options.refreshTokenLifetime = .seconds(400 * 86_400)
        let auth = try AuthPlugin(options: options, clock: { clock.now })
        var payments = PaymentsPlugin.Options()
        payments.revenueCatSecret = rcSecret
        payments.stripeSecrets = stripeSecrets
        payments.catalog = PaymentsCatalog(meters: [.init(name: "chat.messages", limit: meterLimit, period: .day, entitlement: "pro")])
        let plugin = PaymentsPlugin(options: payments, clock: { clock.now })
        let database = try SQLiteDatabase(path: path, bus: nil)
        try await Migrator.migrate(database, auth.migrations + plugin.migrations)
        let bus = EventBus(gates: GateOrder.sorted([AdminGate()] + auth.gates(database: database) + plugin.gates(database: database)))
        database.attach(bus: bus)
        let context = PluginContext(
            bus: bus, database: database, eventLog: EventLog(database: database), logger: Logger(label: "t", handler: InMemoryLogHandler()))
        try await auth.start(context)
        try await plugin.start(context)
        try bus.register(MeteredCall.self) { call, _ in
            if call.fail { throw Failed() }
            return Empty()
        }
        try bus.register(ProOnly.self) { _, _ in Empty() }
        return Harness(bus: bus, database: database, context: context, plugin: plugin, clock: clock, path: path)
    }

    /// A signed-in user on a connection of its own; returns the caller and the user id.
    func user(_ email: String) async throws -> (Caller, String) {
        let user = try await bus.send(AuthInterface.SignUp(email: email, password: "password for \(email)", displayName: nil)).user
        let session = try await bus.send(AuthInterface.SignIn(email: email, password: "password for \(email)")).session
        let caller = Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 1), connection: ConnectionContext(id: Int.random(in: 1...1_000_000), peer: nil))
        _ = try await bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        return (caller, user.id)
    }

    /// The daemon's own uid: passes the admin gate.
    var admin: Caller { Caller(peer: PeerCredentials(uid: getuid(), gid: getgid(), pid: getpid())) }

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

    func count(_ sql: String) async throws -> Int {
        Int(try await database.read { try $0.query(sql).first?.integer("n") } ?? -1)
    }
}

func expectPaymentsError(_ kind: PaymentsError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(kind)", sourceLocation: sourceLocation)
    } catch let error as PaymentsError {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(kind), got \(error)", sourceLocation: sourceLocation)
    }
}
