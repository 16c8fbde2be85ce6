// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The bytes of text each account keeps, by part (todos, chat, memories), counted in the
/// transaction that stores or deletes them, so one account cannot fill the database (security
/// review 2, finding 1: one free account wrote 34 MB/s). A write that would take the account
/// past its limit fails with `StorageQuotaExceeded` and changes nothing. A part whose items
/// have a quota of their own (todos) counts them in the same row (`items`), so a write that
/// adds one moves one row for both.
public enum AccountBytes {
    /// `WITHOUT ROWID`: the key is the row, so a charge touches one b-tree, not a table and its
    /// key's index (every durable write that stores text charges it).
    static let schema = """
        CREATE TABLE IF NOT EXISTS appd_account_bytes (
          owner TEXT NOT NULL,
          part TEXT NOT NULL,
          bytes INTEGER NOT NULL,
          items INTEGER NOT NULL DEFAULT 0,
          PRIMARY KEY (owner, part)
        ) WITHOUT ROWID;
        """

    /// The column added since the table was made.
    static let addItems = "ALTER TABLE appd_account_bytes ADD COLUMN items INTEGER NOT NULL DEFAULT 0"
    /// `addItems` for PostgreSQL, where the schema is applied at every start.
    static let addItemsPostgres = "ALTER TABLE appd_account_bytes ADD COLUMN IF NOT EXISTS items BIGINT NOT NULL DEFAULT 0;"

    /// Rebuilds a table made before it was `WITHOUT ROWID` and adds `items` to one made before
    /// it (SQLite), in one transaction.
    static func upgrade(_ connection: SQLiteConnection) throws {
        let made = try connection.run("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'appd_account_bytes'", []).first?.text("sql") ?? ""
        if !made.uppercased().contains("WITHOUT ROWID") {
            try connection.executeScript(
                "BEGIN IMMEDIATE; ALTER TABLE appd_account_bytes RENAME TO appd_account_bytes_old; " + schema
                    + " INSERT INTO appd_account_bytes (owner, part, bytes) SELECT owner, part, bytes FROM appd_account_bytes_old;"
                    + " DROP TABLE appd_account_bytes_old; COMMIT;")
        } else if !(try connection.run("PRAGMA table_info(appd_account_bytes)", []).contains { $0.text("name") == "items" }) {
            try connection.executeScript(addItems)
        }
    }

    /// The UTF-8 bytes of the texts, as the quota counts them.
    public static func size(_ texts: String?...) -> Int64 {
        texts.reduce(0) { $0 + Int64($1?.utf8.count ?? 0) }
    }

    /// Moves `owner`'s count for `part` by `delta` bytes (and its item count by `items`); a
    /// growth that takes the account's total past `limit` bytes (0: no limit) throws, rolling
    /// the transaction back.
    public static func charge(_ tx: any Transaction, owner: String, part: String, delta: Int64, items: Int64 = 0, limit: Int64) throws {
        let charging = charging(owner: owner, part: part, delta: delta, items: items, limit: limit, dialect: tx.dialect)
        try charging.verify(tx.pipeline(charging.statements)[...])
    }

    /// `charge` as statements a write sends together with its own (`Transaction.pipeline`):
    /// run `statements`, then pass their rows to `verify` — which throws when the account went
    /// past its limit (the write must then throw too, so its transaction rolls back) — and, when
    /// `items` moved, to `items(_:)` for the part's item count after the charge.
    public static func charging(owner: String, part: String, delta: Int64, items: Int64 = 0, limit: Int64, dialect: SQLDialect) -> Charging {
        guard delta != 0 || items != 0 else { return Charging(statements: [], limit: 0, part: part) }
        let parameters: [SQLValue] = [.text(owner), .text(part), .integer(delta), .integer(items)]
        let returning = items != 0 ? " RETURNING items" : ""
        guard delta > 0, limit > 0 else { return Charging(statements: [SQLStatement(upsert + returning, parameters)], limit: 0, part: part) }
        if dialect == .postgres {
            // One statement (one round trip): the part's new count, plus the account's other parts.
            return Charging(
                statements: [
                    SQLStatement(
                        "WITH charged AS (\(upsert) RETURNING bytes, items) SELECT (SELECT bytes FROM charged) + COALESCE((SELECT SUM(bytes) FROM appd_account_bytes "
                            + "WHERE owner = ? AND part <> ?), 0) AS used, (SELECT items FROM charged) AS items",
                        parameters + [.text(owner), .text(part)])
                ], limit: limit, part: part)
        }
        return Charging(
            statements: [
                SQLStatement(upsert + returning, parameters),
                SQLStatement("SELECT COALESCE(SUM(bytes), 0) AS used FROM appd_account_bytes WHERE owner = ?", [.text(owner)]),
            ], limit: limit, part: part)
    }

    /// The statements of one charge and the check of their answer (see `charging`).
    public struct Charging: Sendable {
        public let statements: [SQLStatement]
        let limit: Int64
        let part: String

        /// Checks the rows `statements` returned (the last one's `used`, when there is a limit).
        /// (A slice, not any collection: a generic one ran unspecialised from the plugins that
        /// call it, 2.6% of the writer thread's samples under durable adds.)
        public func verify(_ results: ArraySlice<[Row]>) throws {
            guard limit > 0 else { return }
            guard results.count == statements.count, let used = results.last?.first?.integer("used") else {
                throw StorageError(kind: .other, message: "the account's byte count was not returned")
            }
            if used > limit { throw StorageQuotaExceeded(part: part, limitBytes: limit) }
        }

        /// The part's item count after the charge, from the rows `statements` returned (nil
        /// when the charge did not move `items`).
        public func items(_ results: ArraySlice<[Row]>) -> Int64? {
            results.first?.first?.integer("items")
        }
    }

    private static let upsert =
        "INSERT INTO appd_account_bytes (owner, part, bytes, items) VALUES (?, ?, ?, ?) ON CONFLICT(owner, part) DO UPDATE SET bytes = CASE WHEN "
        + "appd_account_bytes.bytes + excluded.bytes < 0 THEN 0 ELSE appd_account_bytes.bytes + excluded.bytes END, items = CASE WHEN appd_account_bytes.items + "
        + "excluded.items < 0 THEN 0 ELSE appd_account_bytes.items + excluded.items END"

    /// Forgets `owner`'s count for `part`: everything of it was erased.
    public static func reset(_ tx: any Transaction, owner: String, part: String) throws {
        try tx.execute("DELETE FROM appd_account_bytes WHERE owner = ? AND part = ?", [.text(owner), .text(part)])
    }

    /// The SQL for the UTF-8 bytes of a text column (to subtract what a bulk delete frees).
    public static func sizeSQL(_ column: String, _ dialect: SQLDialect) -> String {
        dialect == .postgres ? "COALESCE(SUM(octet_length(\(column))), 0)" : "COALESCE(SUM(length(CAST(\(column) AS BLOB))), 0)"
    }
}
