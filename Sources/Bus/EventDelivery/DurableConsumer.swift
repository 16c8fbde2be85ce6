// SPDX-License-Identifier: Apache-2.0
import BusCore
import Bus
import Runtime
import Storage

/// A plugin's durable consumer: processes every durable event matching `filter` exactly as if
/// it had always been running, at least once, in log order.
///
/// One instance runs it at a time (a lease in the database). It keeps its position (the last
/// sequence handled) in the database. On start it catches up
/// from the log, then follows live events; if it falls so far behind that its live buffer
/// overflows, it goes back to the log. A handler that throws is retried with backoff and the
/// position does not move, so nothing is skipped (handlers must be idempotent).
///
/// The position is saved once per batch of live events taken together (all that were waiting,
/// at most `savesEvery`), not after every event: under load a write handled by a consumer costs
/// one durable write less. The at-least-once window: after a crash, the events of the batch in
/// hand (at most `savesEvery`) are handled again.
public struct DurableConsumer: Service {
    public let name: String
    public let filter: TopicFilter
    let log: EventLog
    let bus: EventBus
    let handler: @Sendable (BusEvent) async throws -> Void
    let logger: Logger
    /// Live events buffered while processing before going back to the log.
    let liveCapacity: Int
    /// The position is saved at least this often, in events handled.
    static let savesEvery = 256

    public init(
        name: String, filter: TopicFilter, log: EventLog, bus: EventBus, liveCapacity: Int = 4096,
        logger: Logger = Logger(label: "appd.consumer"),
        handler: @escaping @Sendable (BusEvent) async throws -> Void
    ) {
        self.name = name
        self.filter = filter
        self.log = log
        self.bus = bus
        self.liveCapacity = liveCapacity
        self.logger = logger
        self.handler = handler
    }

    /// A consumer of one event type. The handler gets the decoded event and its metadata, to
    /// pass on as the cause of whatever it does. Redacted events (an erased account's) are
    /// skipped; an event that does not decode is logged and skipped, never retried forever.
    public init<E: Event>(
        name: String, consuming type: E.Type, log: EventLog, bus: EventBus, liveCapacity: Int = 4096,
        logger: Logger = Logger(label: "appd.consumer"),
        handler: @escaping @Sendable (E, BusEvent) async throws -> Void
    ) throws(InvalidTopic) {
        self.init(name: name, filter: try TopicFilter(E.topic), log: log, bus: bus, liveCapacity: liveCapacity, logger: logger) { event in
            guard !event.redacted else { return }
            guard let value = event.decode(as: E.self) else {
                logger.warning(
                    "skipped an event that does not decode as its type",
                    metadata: ["consumer": name, "event.topic": event.topic, "event.seq": "\(event.sequence ?? -1)", "event.version": "\(event.version)"])
                return
            }
            try await handler(value, event)
        }
    }

    /// Stops as soon as the daemon shuts down: nothing it does needs draining. With several
    /// instances on one database, one runs it at a time: it holds the lease named after it, and
    /// another instance takes over when that one stops or dies.
    public func run() async throws {
        try await cancelOnGracefulShutdown {
            try await self.log.database.holdingLease("consumer." + self.name) { try await self.work() }
        }
    }

    private func work() async throws {
        var position = try await Self.position(of: name, in: log.database)
        while !Task.isCancelled {
            let live = bus.subscribe(filter, options: SubscriptionOptions(capacity: liveCapacity, overflow: .disconnect))
            defer { live.cancel() }
            position = try await catchUp(from: position)
            do {
                while let batch = try await live.nextBatch() {
                    var unsaved = 0
                    for event in batch {
                        guard let sequence = event.sequence, sequence > position else { continue }
                        try await handle(event)
                        position = sequence
                        unsaved += 1
                        if unsaved == Self.savesEvery {
                            try await save(position)
                            unsaved = 0
                        }
                    }
                    if unsaved > 0 { try await save(position) }
                }
            } catch is SubscriptionOverflow {
                logger.notice("fell behind the live stream; catching up from the event log", metadata: ["consumer": name])
            }
        }
        throw CancellationError()
    }

    /// Handles every logged event after `position`; returns the new position.
    private func catchUp(from start: Int64) async throws -> Int64 {
        var position = start
        while true {
            let (page, more) = try await log.page(after: position, limit: 256)
            for event in page {
                if filter.matches(event.topic) { try await handle(event) }
                position = event.sequence ?? position
            }
            if position != start { try await save(position) }
            if !more { return position }
        }
    }

    /// Runs the handler until it succeeds, backing off (capped at 30 s) between failures.
    private func handle(_ event: BusEvent) async throws {
        var delay = Duration.milliseconds(100)
        while true {
            do {
                return try await handler(event)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.error(
                    "consumer failed on an event; retrying",
                    metadata: ["consumer": name, "event.seq": "\(event.sequence ?? -1)", "error": "\(error)", "retry.in": "\(delay)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(30))
            }
        }
    }

    private func save(_ position: Int64) async throws {
        let name = self.name
        try await log.database.write { transaction in
            try transaction.execute(
                "INSERT INTO appd_consumers (name, seq) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET seq = excluded.seq",
                [.text(name), .integer(position)])
        }
    }

    /// Where a consumer stands (0 before its first event).
    public static func position(of name: String, in database: any Database) async throws -> Int64 {
        try await database.read { transaction in
            try transaction.query("SELECT seq FROM appd_consumers WHERE name = ?", [.text(name)]).first?.integer("seq") ?? 0
        }
    }
}
