// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The outcomes of keyed calls (`appd_idempotency`), one row per caller, method and key.
///
/// A row is written in the transaction of the call's first write (`keep`), so the key commits
/// with the effect or not at all; the primary key makes a second attempt's write collide and
/// be undone. The idempotency gate reads rows before a call and writes the outcome of calls that
/// wrote nothing. Rows older than the retention (24 h by default) are pruned.
public struct IdempotencyLog: Sendable {
    /// Created with the database, with the event log.
    static let schema = """
        CREATE TABLE IF NOT EXISTS appd_idempotency (
          scope TEXT NOT NULL,
          method TEXT NOT NULL,
          key TEXT NOT NULL,
          fingerprint TEXT NOT NULL,
          outcome TEXT,
          created_ns INTEGER NOT NULL,
          PRIMARY KEY (scope, method, key)
        );
        CREATE INDEX IF NOT EXISTS appd_idempotency_created ON appd_idempotency(created_ns);
        """

    /// One stored row.
    public struct Entry: Sendable, Equatable {
        public var fingerprint: String
        /// The stored outcome; nil while the first call runs, or when it committed without one.
        public var outcome: Outcome?
        public var createdAt: WallTime
    }

    /// What the first call answered: its reply, or an error of its method's interface.
    public enum Outcome: Sendable, Equatable {
        case reply(JSONValue)
        case error(name: String, parameters: [String: JSONValue])

        var json: JSONValue {
            switch self {
            case .reply(let value): ["reply": value]
            case .error(let name, let parameters): ["error": .string(name), "parameters": .object(parameters)]
            }
        }

        init?(json: JSONValue) {
            if let reply = json["reply"] {
                self = .reply(reply)
            } else if let name = json["error"]?.stringValue {
                self = .error(name: name, parameters: json["parameters"]?.objectValue ?? [:])
            } else {
                return nil
            }
        }
    }

    /// A second attempt with a key whose first attempt committed meanwhile: its write is undone,
    /// and the gate answers with the stored outcome.
    public struct Collision: Error, CustomStringConvertible {
        public var description: String { "another call with this idempotency key committed first" }
    }

    public let database: any Database

    public init(database: any Database) { self.database = database }

    /// The row for this caller, method and key, if any.
    public func entry(scope: String, method: String, key: String) async throws -> Entry? {
        try await database.read { tx in
            guard
                let row = try tx.query(
                    "SELECT fingerprint, outcome, created_ns FROM appd_idempotency WHERE scope = ? AND method = ? AND key = ?",
                    [.text(scope), .text(method), .text(key)]
                ).first,
                let fingerprint = row.text("fingerprint"), let created = row.integer("created_ns")
            else { return nil }
            let outcome = try row.text("outcome").flatMap { text in Outcome(json: try JSONParser.parse(Array(text.utf8))) }
            return Entry(fingerprint: fingerprint, outcome: outcome, createdAt: WallTime(nanosecondsSinceEpoch: created))
        }
    }

    /// Stores the outcome of a call whose handler wrote nothing (or committed without its reply).
    /// Returns the outcome the row holds afterwards: another attempt's, if it stored first.
    public func store(_ record: IdempotencyRecord, outcome: Outcome, now: WallTime = .now()) async throws -> Outcome? {
        let text = String(decoding: JSONWriter.bytes(outcome.json), as: UTF8.self)
        return try await database.write { tx in
            try tx.execute(
                "INSERT INTO appd_idempotency (scope, method, key, fingerprint, outcome, created_ns) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, method, key) DO NOTHING",
                [.text(record.scope), .text(record.method), .text(record.key), .text(record.fingerprint), .text(text), .integer(now.nanosecondsSinceEpoch)])
            try tx.execute(
                "UPDATE appd_idempotency SET outcome = ? WHERE scope = ? AND method = ? AND key = ? AND outcome IS NULL",
                [.text(text), .text(record.scope), .text(record.method), .text(record.key)])
            let stored = try tx.query(
                "SELECT outcome FROM appd_idempotency WHERE scope = ? AND method = ? AND key = ?",
                [.text(record.scope), .text(record.method), .text(record.key)]
            ).first?.text("outcome")
            return try stored.flatMap { Outcome(json: try JSONParser.parse(Array($0.utf8))) }
        }
    }

    /// Deletes rows older than `age`; returns how many.
    @discardableResult
    public func prune(olderThan age: Duration, now: WallTime = .now()) async throws -> Int {
        let cutoff = now.nanosecondsSinceEpoch - Int64(age.components.seconds) * 1_000_000_000
        return try await database.write { tx in
            try tx.execute("DELETE FROM appd_idempotency WHERE created_ns < ?", [.integer(cutoff)])
        }
    }

    /// The scope of a user's keys (`user:ID`; the gate's name for a signed-in caller).
    public static func userScope(_ userID: String) -> String { "user:" + userID }

    /// Erasure: the rows of one scope (a deleted account's stored replies), in the caller's
    /// transaction.
    public static func erase(scope: String, in tx: any Transaction) throws {
        try tx.execute("DELETE FROM appd_idempotency WHERE scope = ?", [.text(scope)])
    }

    /// Keeps the record's row in the transaction of a write the keyed call makes, with the
    /// reply the write staged if any; true when the row now holds the reply. Throws `Collision`
    /// when another attempt's row is already there (the write is then undone).
    static func keep(_ record: IdempotencyRecord, in tx: any Transaction, now: WallTime = .now()) throws -> Bool {
        let staged = record.staged
        let text: SQLValue = staged.map { .text(String(decoding: JSONWriter.bytes(Outcome.reply($0).json), as: UTF8.self)) } ?? .null
        let key: [SQLValue] = [.text(record.scope), .text(record.method), .text(record.key)]
        if record.outcome.committed {
            // An earlier write of this same call committed the row.
            if staged != nil {
                try tx.execute("UPDATE appd_idempotency SET outcome = ? WHERE scope = ? AND method = ? AND key = ? AND outcome IS NULL", [text] + key)
            }
            return staged != nil
        }
        let inserted = try tx.execute("\(insert) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, method, key) DO NOTHING", row(record, now: now))
        guard inserted == 1 else { throw Collision() }
        return staged != nil
    }

    /// The start of the statement that keeps keyed calls' rows (`row`'s values follow).
    static let insert = "INSERT INTO appd_idempotency (scope, method, key, fingerprint, outcome, created_ns)"

    /// A keyed call's row as `keep` inserts it, with the reply its write staged (for an engine
    /// that inserts the rows of a batch with its commit: `DatabaseWork.run(deferKeys:)`).
    static func row(_ record: IdempotencyRecord, now: WallTime = .now()) -> [SQLValue] {
        let text: SQLValue = record.staged.map { .text(String(decoding: JSONWriter.bytes(Outcome.reply($0).json), as: UTF8.self)) } ?? .null
        return [.text(record.scope), .text(record.method), .text(record.key), .text(record.fingerprint), text, .integer(now.nanosecondsSinceEpoch)]
    }
}

extension Transaction {
    /// The reply the keyed call this write belongs to gives if the write commits (the method's
    /// whole reply object): kept with the call's idempotency key in this same transaction, so
    /// a crash after the commit cannot lose it. Does nothing for calls without a key.
    public func stageReply<R: Encodable>(_ reply: R) throws {
        guard let record = idempotency else { return }
        record.stage(reply: try JSONValue(encoding: reply))
    }
}
