// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The `Transaction` a closure sees on PostgreSQL; collects the events appended (the outbox).
final class PostgresTransaction: OutboxTransaction {
    private let connection: PostgresConnection
    /// The write transaction this runs in; nil in a read.
    private let attempt: PostgresWriteAttempt?
    private(set) var events: [BusEvent] = []
    var idempotency: IdempotencyRecord?
    private(set) var deferred: [DeferredEntry] = []

    init(connection: PostgresConnection, attempt: PostgresWriteAttempt?) {
        self.connection = connection
        self.attempt = attempt
    }

    /// The statement that logs one event at the position `appd_event_position() + ?` (the
    /// last parameter: its index in the transaction).
    static let insert = """
        INSERT INTO appd_events (topic, time_ns, payload, correlation, causation, message_id, version, owner, seq)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, appd_event_position() + ?) RETURNING seq
        """

    var dialect: SQLDialect { .postgres }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        try run(sql, parameters).changed
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        try run(sql, parameters).rows
    }

    private func run(_ sql: String, _ parameters: [SQLValue]) throws(StorageError) -> (rows: [Row], changed: Int) {
        guard let attempt else { return try connection.run(sql, parameters) }
        return try attempt.noting { () throws(StorageError) in try connection.run(sql, parameters) }
    }

    /// Checked now (topic, payload), logged with the rest of the batch's events in one
    /// statement before the commit: one round trip less per write.
    func appendAtCommit(_ event: BusEvent) throws {
        guard attempt != nil else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        deferred.append(.event(event, try EventLog.parameters(event)))
    }

    func redactEvents(about userID: String) throws -> Int {
        deferred.append(.redaction(owner: userID))
        return try run(EventLog.redact, [.text(userID)]).changed
    }

    /// The event's position is its transaction's (see `PostgresWriteAttempt`): readers take it
    /// only once every transaction that could still log below it has ended.
    func append(_ event: BusEvent) throws -> Int64 {
        guard let attempt else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        // Encoded once: the log's row and the bus's delivery share the JSON.
        let payload = try event.jsonBytes()
        let rows = try run(Self.insert, try EventLog.parameters(event, payload: payload) + [.integer(try attempt.take(1))]).rows
        guard let sequence = rows.first?.integer("seq") else {
            throw StorageError(kind: .other, message: "the event log returned no sequence number")
        }
        events.append(event.logged(at: sequence, payload: payload))
        return sequence
    }
}
