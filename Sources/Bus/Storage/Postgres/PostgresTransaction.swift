// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The `Transaction` a closure sees on PostgreSQL; collects the events appended (the outbox).
final class PostgresTransaction: OutboxTransaction {
    private let connection: PostgresConnection
    private let logEvents: Bool
    private(set) var events: [BusEvent] = []
    var idempotency: IdempotencyRecord?
    private(set) var deferred: [DeferredEntry] = []

    init(connection: PostgresConnection, logEvents: Bool) {
        self.connection = connection
        self.logEvents = logEvents
    }

    var dialect: SQLDialect { .postgres }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        try connection.run(sql, parameters).changed
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        try connection.run(sql, parameters).rows
    }

    /// The sequence comes from the log's identity column. Every write transaction holds the
    /// database's write lock from its first statement to its commit (see `PostgresDatabase`),
    /// so sequence order is commit order across instances: a reader of `seq > since` never
    /// misses an event that commits late.
    /// Checked now (topic, payload), logged with the rest of the batch's events in one
    /// statement before the commit: one round trip less per write.
    func appendAtCommit(_ event: BusEvent) throws {
        guard logEvents else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        deferred.append(.event(event, try EventLog.parameters(event)))
    }

    func redactEvents(about userID: String) throws -> Int {
        deferred.append(.redaction(owner: userID))
        return try connection.run(EventLog.redact, [.text(userID)]).changed
    }

    func append(_ event: BusEvent) throws -> Int64 {
        guard logEvents else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        // Encoded once: the log's row and the bus's delivery share the JSON.
        let payload = try event.jsonBytes()
        let rows = try connection.run(EventLog.insert + " RETURNING seq", try EventLog.parameters(event, payload: payload)).rows
        guard let sequence = rows.first?.integer("seq") else {
            throw StorageError(kind: .other, message: "the event log returned no sequence number")
        }
        events.append(event.logged(at: sequence, payload: payload))
        return sequence
    }
}
