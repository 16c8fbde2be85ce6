// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import HTTP
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth
@testable import Payments

/// A database whose writes take `delay` inside the transaction, on the writer thread, where
/// cancelling the caller cannot stop them: a slow disk, a long lock.
final class SlowWrites: Database {
    let base: any Database
    let delay: Duration
    let finished = Atomic<Int>(0)
    init(_ base: any Database, delay: Duration) {
        self.base = base
        self.delay = delay
    }
    func write<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        let micros = useconds_t(delay.components.seconds * 1_000_000 + delay.components.attoseconds / 1_000_000_000_000)
        defer { finished.add(1, ordering: .relaxed) }
        return try await base.write { tx in
            usleep(micros)
            return try body(tx)
        }
    }
    func read<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T { try await base.read(body) }
    func close() async { await base.close() }
    var dialect: SQLDialect { base.dialect }
    var sharedAcrossInstances: Bool { base.sharedAcrossInstances }
    func holdingLease(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws { try await base.holdingLease(name, body) }
}

@Suite(.cleansUp) struct WebhookDeadlineTests {
    /// The webhook routes, their service storing through `database`.
    func ingress(_ h: Harness, database: any Database, deliveryTimeout: Duration) -> WebhookIngress {
        let context = PluginContext(bus: h.bus, database: database, eventLog: EventLog(database: h.database), logger: h.context.logger)
        var ingress = h.plugin.webhooks(context)
        ingress.deliveryTimeout = deliveryTimeout
        return ingress
    }

    func delivery(_ id: String) -> (WebhookRequest, [UInt8]) {
        let event: JSONValue = [
            "id": .string(id), "type": "INITIAL_PURCHASE", "app_user_id": "nobody", "product_id": "pro_monthly", "entitlement_ids": ["pro"],
            "event_timestamp_ms": 1_800_000_000_000,
        ]
        let body = JSONWriter.bytes(["api_version": "1.0", "event": event])
        let head = WebhookRequest(provider: "revenuecat", headers: ["authorization": "Bearer \(Harness.rcSecret)"], contentLength: body.count, expectsContinue: false)
        return (head, body)
    }

    @Test func aStoreThatOutlivesTheDeadlineIsAnswered503AndNotStored() async throws {
        let h = try await Harness.make()
        // The write takes far longer than the deadline, so a timer that fires late on a loaded
        // machine still fires while the write is running.
        let slow = SlowWrites(h.database, delay: .seconds(3))
        let (head, body) = delivery("evt_late")
        let response = await ingress(h, database: slow, deliveryTimeout: .milliseconds(150)).deliver(head, body)
        #expect(response.status == 503)
        // The write was already running on the writer thread when the provider was answered:
        // once it is over, nothing of it may be in the database.
        #expect(await eventually { slow.finished.load(ordering: .relaxed) >= 1 })
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events") == 0)
    }

    @Test func aStoreWithinTheDeadlineIsAnswered200AndStored() async throws {
        let h = try await Harness.make()
        let slow = SlowWrites(h.database, delay: .milliseconds(50))
        let (head, body) = delivery("evt_on_time")
        let response = await ingress(h, database: slow, deliveryTimeout: .seconds(10)).deliver(head, body)
        #expect(response.status == 200)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM payments_events") == 1)
    }
}
