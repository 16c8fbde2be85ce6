// SPDX-License-Identifier: Apache-2.0
import BusCore
import Runtime

/// The durable event log: every domain event with its global sequence number, written in the
/// same transaction as the change that caused it (see `Transaction.append`).
public struct EventLog: EventReplay {
    /// The log's table. A position is the row's key (SQLite: the rowid, the newest plus one;
    /// PostgreSQL: an identity, see `PostgresSchema`), never handed out twice because the log's
    /// newest event is never pruned (`prune`). Not `AUTOINCREMENT`: that keeps the last position
    /// in `sqlite_sequence` as well, a b-tree more written by every durable write.
    static let eventsTable = """
        CREATE TABLE IF NOT EXISTS appd_events (
          seq INTEGER PRIMARY KEY,
          topic TEXT NOT NULL,
          time_ns INTEGER NOT NULL,
          payload TEXT NOT NULL,
          correlation TEXT,
          causation TEXT,
          message_id TEXT,
          version INTEGER NOT NULL DEFAULT 1,
          owner TEXT,
          redacted INTEGER NOT NULL DEFAULT 0
        )
        """

    /// Created with the database, before any plugin migration: the log, the erased owners and
    /// the durable consumers' positions.
    static let schema =
        eventsTable + """
            ;
            CREATE TABLE IF NOT EXISTS appd_erased_owners (
              owner TEXT PRIMARY KEY
            );
            CREATE TABLE IF NOT EXISTS appd_consumers (
              name TEXT PRIMARY KEY,
              seq INTEGER NOT NULL
            );
            """

    /// Columns added since the first release, for databases created before them: events'
    /// own ids, payload versions, owners (for visibility and erasure) and tombstones. Rows
    /// written before get version 1 and their owner from the payload's `userId`.
    static let addedColumns = [
        ("message_id", "ALTER TABLE appd_events ADD COLUMN message_id TEXT"),
        ("version", "ALTER TABLE appd_events ADD COLUMN version INTEGER NOT NULL DEFAULT 1"),
        ("owner", "ALTER TABLE appd_events ADD COLUMN owner TEXT"),
        ("redacted", "ALTER TABLE appd_events ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0"),
    ]

    /// Brings an older event log to the current shape, in one transaction.
    static func upgrade(_ connection: SQLiteConnection) throws {
        let columns = Set(try connection.run("PRAGMA table_info(appd_events)", []).compactMap { $0.text("name") })
        let missing = addedColumns.filter { !columns.contains($0.0) }
        var script = missing.map(\.1)
        if missing.contains(where: { $0.0 == "owner" }) {
            script.append("UPDATE appd_events SET owner = json_extract(payload, '$.userId') WHERE json_valid(payload) AND json_type(payload, '$.userId') = 'text'")
        }
        if try positionsCanMoveToTheKey(connection) {
            script += [
                "ALTER TABLE appd_events RENAME TO appd_events_autoincrement", eventsTable,
                "INSERT INTO appd_events (\(allColumns)) SELECT \(allColumns) FROM appd_events_autoincrement", "DROP TABLE appd_events_autoincrement",
            ]
        }
        script.append("CREATE INDEX IF NOT EXISTS appd_events_owner ON appd_events(owner)")
        try connection.executeScript("BEGIN IMMEDIATE; " + script.joined(separator: "; ") + "; COMMIT;")
    }

    /// Every column of the current shape, in order.
    static let allColumns = "seq, topic, time_ns, payload, correlation, causation, message_id, version, owner, redacted"

    /// Whether a log made with `AUTOINCREMENT` can be rebuilt without it: only when no position
    /// above its newest row was ever handed out (`sqlite_sequence` says the newest is the last),
    /// since the rebuilt table continues from its newest row. A log whose newest events were
    /// pruned (before `prune` kept the newest) keeps `AUTOINCREMENT` until an event is logged
    /// again; the next start rebuilds it then.
    static func positionsCanMoveToTheKey(_ connection: SQLiteConnection) throws -> Bool {
        let made = try connection.run("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'appd_events'", []).first?.text("sql") ?? ""
        guard made.uppercased().contains("AUTOINCREMENT") else { return false }
        let handedOut = try connection.run("SELECT seq FROM sqlite_sequence WHERE name = 'appd_events'", []).first?.integer("seq") ?? 0
        let newest = try connection.run("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events", []).first?.integer("seq") ?? 0
        return handedOut <= newest
    }

    /// The statement that logs one event (both engines; PostgreSQL appends `RETURNING seq`).
    static let insert = """
        INSERT INTO appd_events (topic, time_ns, payload, correlation, causation, message_id, version, owner)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// Erasure of the logged events about one owner.
    static let redact = "UPDATE appd_events SET payload = '{}', redacted = 1 WHERE owner = ? AND redacted = 0"

    /// Remembers an owner as erased: an event about them logged later (a consumer still
    /// catching up, a write committing on another instance meanwhile) is logged redacted.
    static let erase = "INSERT INTO appd_erased_owners (owner) VALUES (?) ON CONFLICT DO NOTHING"

    /// A row when the owner was erased.
    static let isErased = "SELECT 1 AS erased FROM appd_erased_owners WHERE owner = ?"

    /// `insert` for an event whose owner was erased: its payload is the tombstone's.
    static let insertRedacted = """
        INSERT INTO appd_events (topic, time_ns, payload, correlation, causation, message_id, version, owner, redacted)
        VALUES (?, ?, '{}', ?, ?, ?, ?, ?, 1)
        """

    /// `insert`'s parameters for `event`, after checking its topic; `payload`: the event's JSON
    /// text when the caller has it already.
    static func parameters(_ event: BusEvent, payload: [UInt8]? = nil) throws -> [SQLValue] {
        try TopicFilter.validate(topic: event.topic)
        return [
            .text(event.topic), .integer(event.timestamp.nanosecondsSinceEpoch), .text(String(decoding: try payload ?? event.jsonBytes(), as: UTF8.self)),
            .text(event.correlationID.description), event.causationID.map { .text($0.description) } ?? .null,
            .text(event.id.description), .integer(Int64(event.version)), event.owner.map { .text($0) } ?? .null,
        ]
    }

    public let database: any Database

    public init(database: any Database) { self.database = database }

    /// A page of the log ends at this many bytes of payloads (or at its count): a replay a
    /// client leaves unread holds at most about that much of appd's memory.
    static let page = BytePage(columns: ["payload"])

    /// Events after `sequence`, oldest first, at most `limit` and about `BytePage.defaultBudget`
    /// bytes of payloads (at least one): a short page is not the log's end, an empty one is.
    public func events(after sequence: Int64, limit: Int) async throws -> [BusEvent] {
        try await page(after: sequence, limit: limit).events
    }

    /// As `events(after:limit:)`, and whether more may follow (the page is full by count or bytes).
    public func page(after sequence: Int64, limit: Int) async throws -> (events: [BusEvent], more: Bool) {
        let (rows, cut) = try await database.read { transaction in
            try Self.page.rows(
                "SELECT * FROM appd_events WHERE seq > ? AND seq < \(transaction.dialect.eventHorizon) ORDER BY seq LIMIT ?", orderBy: "seq",
                [.integer(sequence), .integer(Int64(limit))], in: transaction)
        }
        return (try rows.map(Self.event), cut || rows.count >= limit)
    }

    public func events(about owner: String, after sequence: Int64, limit: Int) async throws -> [BusEvent] {
        let rows = try await database.read { transaction in
            try Self.page.rows(
                "SELECT * FROM appd_events WHERE owner = ? AND seq > ? AND seq < \(transaction.dialect.eventHorizon) ORDER BY seq LIMIT ?", orderBy: "seq",
                [.text(owner), .integer(sequence), .integer(Int64(limit))],
                in: transaction
            ).shown
        }
        return try rows.map(Self.event)
    }

    /// One row as an event. Rows from before events kept their ids get one made from the
    /// sequence (stable across reads), and are their own correlation.
    static func event(_ row: Row) throws -> BusEvent {
        guard let seq = row.integer("seq"), let topic = row.text("topic"), let time = row.integer("time_ns"),
            let payload = row.text("payload")
        else { throw StorageError(kind: .corrupt, message: "an event log row is incomplete") }
        let id = row.text("message_id").flatMap(MessageID.init) ?? MessageID(sequence: UInt64(seq), instance: 0)
        return BusEvent(
            stored: id, correlationID: row.text("correlation").flatMap(MessageID.init) ?? id,
            causationID: row.text("causation").flatMap(MessageID.init), topic: topic, version: Int(row.integer("version") ?? 1),
            owner: row.text("owner"), sequence: seq, timestamp: WallTime(nanosecondsSinceEpoch: time),
            payload: try JSONParser.parse(Array(payload.utf8)), redacted: row.integer("redacted") == 1)
    }

    /// Commits one event on its own; returns its sequence number once it is durable.
    public func append(_ event: BusEvent) async throws -> Int64 {
        try await database.write { transaction in try transaction.append(event) }
    }

    /// Waits, at most `timeout`, until every event committed before the call is final (below
    /// the horizon, `SQLDialect.eventHorizon`), so that a read after it sees the caller's own
    /// earlier writes: a pull of a change feed right after a write includes that write. On
    /// PostgreSQL an older transaction still running holds the horizon back (milliseconds for
    /// appd's own); on SQLite everything committed is final at once. Returns whether it settled
    /// (if not, the read that follows is still consistent, only without the newest events).
    @discardableResult
    public func settle(within timeout: Duration = .seconds(1)) async throws -> Bool {
        guard database.dialect == .postgres else { return true }
        let deadline = ContinuousClock.now + timeout
        // One read when it is settled already (the usual case): the newest committed and the head.
        var (wanted, head) = try await database.read { transaction in
            (try transaction.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events").first?.integer("seq") ?? 0, try Self.head(transaction))
        }
        var pause = Duration.microseconds(500)
        while head < wanted {
            if ContinuousClock.now + pause > deadline {
                Metrics.shared.increment(
                    "appd_event_log_settle_timeouts_total",
                    help: "Reads that waited the longest allowed for older transactions to end (a transaction open long on the server holds the event log back).")
                return false
            }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(20))
            head = try await database.read { transaction in try Self.head(transaction) }
        }
        return true
    }

    /// The newest final position (see `SQLDialect.eventHorizon`), 0 for an empty log.
    public func lastSequence() async throws -> Int64 {
        try await database.read { transaction in try Self.head(transaction) }
    }

    /// The newest final position in `transaction`'s snapshot, 0 for an empty log: a reader
    /// that has read up to it has read everything that will ever be logged at or before it.
    public static func head(_ transaction: any Transaction) throws -> Int64 {
        try transaction.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM appd_events WHERE seq < \(transaction.dialect.eventHorizon)").first?.integer("seq") ?? 0
    }

    /// A consumer's lag is counted up to this many events (a count costs a read of each).
    public static let lagCountLimit: Int64 = 100_000

    /// Each durable consumer's position and how many final events follow it (counted up to
    /// `lagCountLimit`: positions are not dense, so a difference of positions is no count).
    public func consumerLag() async throws -> (last: Int64, consumers: [(name: String, position: Int64, lag: Int64)]) {
        try await database.read { transaction in
            let last = try Self.head(transaction)
            let rows = try transaction.query("SELECT name, seq FROM appd_consumers ORDER BY name")
            return try (
                last,
                rows.compactMap { row in
                    guard let name = row.text("name"), let position = row.integer("seq") else { return nil }
                    let lag =
                        try transaction.query(
                            "SELECT COUNT(*) AS n FROM (SELECT 1 FROM appd_events WHERE seq > ? AND seq <= ? LIMIT ?) AS behind",
                            [.integer(position), .integer(last), .integer(Self.lagCountLimit)]
                        ).first?.integer("n") ?? 0
                    return (name, position, lag)
                }
            )
        }
    }

    /// Deletes events older than `maxAge` and beyond the newest `maxCount`; returns how many.
    /// The newest event stays whatever its age (and a `maxCount` below 1 counts as 1): its
    /// position is where the next one continues (SQLite's key is the newest plus one), so no
    /// position is handed out twice and no consumer's or client's cursor is ever passed over.
    @discardableResult
    public func prune(maxAge: Duration?, maxCount: Int?) async throws -> Int {
        let cutoff = maxAge.map { WallTime.now().nanosecondsSinceEpoch - Int64($0.components.seconds) * 1_000_000_000 }
        return try await database.write { transaction in
            var removed = 0
            if let cutoff {
                removed += try transaction.execute(
                    "DELETE FROM appd_events WHERE time_ns < ? AND seq < (SELECT MAX(seq) FROM appd_events)", [.integer(cutoff)])
            }
            if let maxCount {
                // Positions are not dense (PostgreSQL): the newest `maxCount` rows by count.
                removed += try transaction.execute(
                    "DELETE FROM appd_events WHERE seq <= (SELECT seq FROM appd_events ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                    [.integer(Int64(max(1, maxCount)))])
            }
            return removed
        }
    }
}
