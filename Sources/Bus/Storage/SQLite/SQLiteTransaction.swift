// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The `Transaction` a write or read closure sees; collects the events appended (the outbox).
final class SQLiteTransaction: OutboxTransaction {
    private let connection: SQLiteConnection
    private let logEvents: Bool
    private(set) var events: [BusEvent] = []
    var idempotency: IdempotencyRecord?
    /// The owners this write erased: its own events about them after the erasure keep their payload.
    private var erasedHere: Set<String> = []

    init(connection: SQLiteConnection, logEvents: Bool) {
        self.connection = connection
        self.logEvents = logEvents
    }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        _ = try run(sql, parameters)
        return connection.changes
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        try run(sql, parameters)
    }

    /// Steps the page's own query and stops at the first row past its budget: no running-sum
    /// SQL (a window function costs SQLite more than the whole plain query), and nothing read
    /// past the budget.
    func page(_ page: BytePage, _ inner: String, orderBy: String, _ parameters: [SQLValue]) throws -> (shown: [Row], cut: Bool) {
        guard connection.inTransaction else { throw Self.rolledBack }
        var used = 0, first = true
        let (rows, stopped) = try connection.run(inner, parameters) { row in
            used += page.size(of: row)
            defer { first = false }
            return !first && used > page.budget
        }
        return (rows, stopped)
    }

    /// Runs a statement of the closure's, inside the transaction it was given: if SQLite has
    /// rolled that back by itself (after a full disk or an I/O error), the statement would
    /// commit on its own, so it fails instead (and with it the batch: nothing of it is applied).
    private func run(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        guard connection.inTransaction else { throw Self.rolledBack }
        return try connection.run(sql, parameters)
    }

    static let rolledBack = StorageError(
        kind: .io, message: "SQLite rolled the transaction back after an error (a full disk, an I/O error); nothing of it was applied, try again")

    var dialect: SQLDialect { .sqlite }

    func append(_ event: BusEvent) throws -> Int64 {
        guard logEvents else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        // Encoded once: the log's row and the bus's delivery share the JSON.
        let payload = try event.jsonBytes()
        var parameters = try EventLog.parameters(event, payload: payload)
        if let owner = event.owner, connection.mayHoldErasedOwners, !erasedHere.contains(owner), !(try run(EventLog.isErased, [.text(owner)])).isEmpty {
            parameters.remove(at: 2)  // the payload
            _ = try run(EventLog.insertRedacted, parameters)
            let sequence = connection.lastInsertRowID
            events.append(event.tombstone(at: sequence))
            return sequence
        }
        _ = try run(EventLog.insert, parameters)
        let sequence = connection.lastInsertRowID
        events.append(event.logged(at: sequence, payload: payload))
        return sequence
    }

    func redactEvents(about userID: String) throws -> Int {
        connection.mayHoldErasedOwners = true
        _ = try run(EventLog.erase, [.text(userID)])
        erasedHere.insert(userID)
        return try execute(EventLog.redact, [.text(userID)])
    }
}
