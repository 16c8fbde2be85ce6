import Bus

/// The durable event log: every domain event with its global sequence number, written in the
/// same transaction as the change that caused it (see `Transaction.append`).
public struct EventLog: EventReplay {
    /// Created with the database, before any plugin migration.
    static let schema = """
        CREATE TABLE IF NOT EXISTS appd_events (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          topic TEXT NOT NULL,
          time_ns INTEGER NOT NULL,
          payload TEXT NOT NULL,
          correlation TEXT,
          causation TEXT
        );
        CREATE TABLE IF NOT EXISTS appd_consumers (
          name TEXT PRIMARY KEY,
          seq INTEGER NOT NULL
        );
        """

    public let database: any Database

    public init(database: any Database) { self.database = database }

    /// Events after `sequence`, oldest first, at most `limit`.
    public func events(after sequence: Int64, limit: Int) async throws -> [BusEvent] {
        let rows = try await database.read { transaction in
            try transaction.query(
                "SELECT seq, topic, time_ns, payload FROM appd_events WHERE seq > ? ORDER BY seq LIMIT ?",
                [.integer(sequence), .integer(Int64(limit))])
        }
        return try rows.map { row in
            guard let seq = row.integer("seq"), let topic = row.text("topic"), let time = row.integer("time_ns"),
                let payload = row.text("payload")
            else { throw StorageError(kind: .corrupt, message: "an event log row is incomplete") }
            return BusEvent(
                topic: topic, payload: .json(try JSONParser.parse(Array(payload.utf8))), sequence: seq,
                timestamp: WallTime(nanosecondsSinceEpoch: time))
        }
    }

    /// Commits one event on its own; returns its sequence number once it is durable.
    public func append(topic: String, payload: JSONValue, causedBy cause: Envelope?) async throws -> Int64 {
        try await database.write { transaction in
            try transaction.append(topic: topic, payload: payload, causedBy: cause)
            return transaction.lastInsertRowID
        }
    }

    /// The newest sequence number, 0 for an empty log.
    public func lastSequence() async throws -> Int64 {
        try await database.read { transaction in
            try transaction.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events").first?.integer("seq") ?? 0
        }
    }

    /// Each durable consumer's position and how far behind the newest event it is.
    public func consumerLag() async throws -> (last: Int64, consumers: [(name: String, position: Int64, lag: Int64)]) {
        try await database.read { transaction in
            let last = try transaction.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events").first?.integer("seq") ?? 0
            let rows = try transaction.query("SELECT name, seq FROM appd_consumers ORDER BY name")
            return (last, rows.compactMap { row in
                guard let name = row.text("name"), let position = row.integer("seq") else { return nil }
                return (name, position, max(0, last - position))
            })
        }
    }

    /// Deletes events older than `maxAge` and beyond the newest `maxCount`; returns how many.
    @discardableResult
    public func prune(maxAge: Duration?, maxCount: Int?) async throws -> Int {
        let cutoff = maxAge.map { WallTime.now().nanosecondsSinceEpoch - Int64($0.components.seconds) * 1_000_000_000 }
        return try await database.write { transaction in
            var removed = 0
            if let cutoff {
                removed += try transaction.execute("DELETE FROM appd_events WHERE time_ns < ?", [.integer(cutoff)])
            }
            if let maxCount {
                removed += try transaction.execute(
                    "DELETE FROM appd_events WHERE seq <= (SELECT COALESCE(MAX(seq), 0) FROM appd_events) - ?",
                    [.integer(Int64(maxCount))])
            }
            return removed
        }
    }
}
