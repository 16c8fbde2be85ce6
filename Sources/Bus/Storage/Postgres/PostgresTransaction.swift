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
    /// The owners this write erased: its own events about them after the erasure keep their payload.
    private var erasedHere: Set<String> = []

    init(connection: PostgresConnection, attempt: PostgresWriteAttempt?) {
        self.connection = connection
        self.attempt = attempt
    }

    var dialect: SQLDialect { .postgres }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        try run(sql, parameters).changed
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        try run(sql, parameters).rows
    }

    /// One round trip for all of them, each prepared once per connection.
    func pipeline(_ statements: [SQLStatement]) throws -> [[Row]] {
        let list = statements.map { (sql: $0.sql, parameters: $0.parameters) }
        guard let attempt else { return try connection.runPipelined(list, prepared: true) }
        return try attempt.noting { () throws(StorageError) in try connection.runPipelined(list, prepared: true) }
    }

    private func run(_ sql: String, _ parameters: [SQLValue]) throws(StorageError) -> (rows: [Row], changed: Int) {
        guard let attempt else { return try connection.run(sql, parameters) }
        return try attempt.noting { () throws(StorageError) in try connection.run(sql, parameters) }
    }

    /// Checked now (topic, payload) and given its index in the transaction, logged with the
    /// rest of the batch's events in one statement before the commit: one round trip less per
    /// write. The last parameter is the index (see `PostgresDatabase.log`).
    func appendAtCommit(_ event: BusEvent) throws {
        guard let attempt else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        try deferEvent(event, index: try attempt.take(1))
    }

    /// Sent with the batch's commit (one `pg_notify` each, in the statement that tells the
    /// feeds of its events). A write of the batch that rolls back to its savepoint leaves its
    /// signals in: a signal says "forget", and forgetting more than needed is safe.
    func signal(_ message: String) throws {
        guard let attempt else {
            throw StorageError(kind: .other, message: "signals can only be sent from a write transaction")
        }
        guard message.utf8.count <= PostgresWriteAttempt.signalBytes else {
            throw StorageError(kind: .full, message: "a signal is at most \(PostgresWriteAttempt.signalBytes) bytes (NOTIFY's payload limit)")
        }
        attempt.signals.append(message)
    }

    private func deferEvent(_ event: BusEvent, index: Int64) throws {
        deferred.append(
            DeferredEntry(
                event: event, parameters: try EventLog.parameters(event), index: index,
                keptThroughErasure: event.owner.map(erasedHere.contains) ?? false))
    }

    /// A batch logging an event about the owner at the same moment either commits first (and
    /// this redacts its row) or sees the owner erased (see `PostgresDatabase.logStatements`);
    /// the owner's erasure lock, held to the commit, makes the batches wait and retry, not this.
    func redactEvents(about userID: String) throws -> Int {
        attempt?.erasures.insert(userID)
        _ = try run(PostgresSchema.erasureLock(owners: 1, .exclusive), [.text(userID)])
        _ = try run(EventLog.erase, [.text(userID)])
        erasedHere.insert(userID)
        return try run(EventLog.redact, [.text(userID)]).changed
    }

    /// The event's position is known at once (`appd_event_position()` of the transaction, asked
    /// once, plus the event's index), so its row is logged at the commit with the batch's other
    /// events, as `appendAtCommit` does: no round trip per event. Readers take it only once
    /// every transaction that could still log below it has ended (see `PostgresWriteAttempt`).
    func append(_ event: BusEvent) throws -> Int64 {
        guard let attempt else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        let index = try attempt.take(1)
        let position = try attempt.position(of: index, on: connection)
        try deferEvent(event, index: index)
        return position
    }
}
