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

    func append(_ event: BusEvent) throws {
        guard logEvents else {
            throw StorageError(kind: .other, message: "events can only be appended in a write transaction")
        }
        try TopicFilter.validate(topic: event.topic)
        let payload = try event.json()
        _ = try connection.run(
                """
                INSERT INTO appd_events (topic, time_ns, payload, correlation, causation, message_id, version, owner)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(event.topic), .integer(event.timestamp.nanosecondsSinceEpoch), .text(payload.jsonText),
                    .text(event.correlationID.description), event.causationID.map { .text($0.description) } ?? .null,
                    .text(event.id.description), .integer(Int64(event.version)), event.owner.map { .text($0) } ?? .null,
                ])
        events.append(event.logged(at: connection.lastInsertRowID))
    }
}
