import BusCore

/// The `Transaction` a write or read closure sees; collects the events appended (the outbox).
final class SQLiteTransaction: OutboxTransaction {
    private let connection: SQLiteConnection
    private let logEvents: Bool
    private(set) var events: [BusEvent] = []
    var idempotency: IdempotencyRecord?

    init(connection: SQLiteConnection, logEvents: Bool) {
        self.connection = connection
        self.logEvents = logEvents
    }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        _ = try connection.run(sql, parameters)
        return connection.changes
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        try connection.run(sql, parameters)
    }

    var dialect: SQLDialect { .sqlite }

    func append(_ event: BusEvent) throws -> Int64 {
        guard logEvents else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        // Encoded once: the log's row and the bus's delivery share the JSON.
        let payload = try event.json()
        _ = try connection.run(EventLog.insert, try EventLog.parameters(event, payload: payload))
        let sequence = connection.lastInsertRowID
        events.append(event.logged(at: sequence, payload: payload))
        return sequence
    }
}
