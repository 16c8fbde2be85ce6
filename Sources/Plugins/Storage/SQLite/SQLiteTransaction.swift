import Bus

/// The `Transaction` a write or read closure sees; collects the events appended (the outbox).
final class SQLiteTransaction: Transaction {
    private let connection: SQLiteConnection
    private let logEvents: Bool
    private(set) var events: [BusEvent] = []

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

    var lastInsertRowID: Int64 { connection.lastInsertRowID }

    func append(topic: String, payload: JSONValue, causedBy cause: Envelope?) throws {
        guard logEvents else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        try TopicFilter.validate(topic: topic)
        let timestamp = WallTime.now()
        _ = try connection.run(
                "INSERT INTO appd_events (topic, time_ns, payload, correlation, causation) VALUES (?, ?, ?, ?, ?)",
                [
                    .text(topic), .integer(timestamp.nanosecondsSinceEpoch), .text(payload.jsonText),
                    cause.map { .text($0.correlationID.description) } ?? .null,
                    cause.map { .text($0.id.description) } ?? .null,
                ])
        let sequence = connection.lastInsertRowID
        events.append(BusEvent(topic: topic, payload: .json(payload), sequence: sequence, causedBy: cause, timestamp: timestamp))
    }
}
