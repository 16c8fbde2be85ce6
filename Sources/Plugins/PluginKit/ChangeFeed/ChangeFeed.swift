// SPDX-License-Identifier: Apache-2.0
import Bus
import Storage

/// A per-owner change feed over one plugin's table, on the event log's sequence (the
/// sequence `io.appd.Bus.Subscribe` replays from): a client pulls what changed after its cursor
/// — the current row of each changed item, a tombstone for each deleted one — until it is
/// caught up, then subscribes from the cursor it was given, with no gap and no repeat.
///
/// The table needs `id` (text, unique), `owner` (text) and the `change_seq` column the feed's
/// migration adds. Every write that changes an item logs its event with `Transaction.appendLogged`
/// and sets `change_seq` to that sequence in the statement that makes the change (`deleted` for
/// a deletion), in the same transaction. Tombstones are kept
/// for a configured time; a cursor older than the newest tombstone pruned can no longer be
/// brought up to date (`ResyncNeeded`: start again from an empty cursor).
public struct ChangeFeed: Sendable {
    /// The items' table (a plugin's own table name: checked to be a plain identifier).
    public let table: String
    /// Bounds a page by the bytes of the items' text columns as well as by count.
    public let bytes: BytePage
    var tombstones: String { table + "_tombstones" }
    var horizon: String { table + "_feed_horizon" }

    /// `measured`: the table's text columns whose bytes a page counts (a title, notes).
    public init(table: String, measured: [String], pageBytes: Int = BytePage.defaultBudget) {
        precondition(!table.isEmpty && table.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 97 && $0 <= 122) }, "a feed's table is a plain lowercase identifier")
        self.table = table
        self.bytes = BytePage(budget: pageBytes, columns: measured)
    }

    /// Sequences of rows from before the feed: below every real one (the log's start at 1), distinct,
    /// in the order of an integer column of the table, so a first pull pages through them too.
    static let before: Int64 = -(1 << 62)

    /// The migration that gives the table its feed: the `change_seq` column (rows from before
    /// get distinct negative sequences in `existingOrder`'s order), tombstones, and the horizon
    /// below which tombstones were pruned (at first none: the lowest integer).
    public func migration(plugin: String, version: Int, existingOrder: String) -> Migration {
        Migration(
            plugin: plugin, version: version,
            sql: """
                ALTER TABLE \(table) ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
                UPDATE \(table) SET change_seq = \(existingOrder) + (\(Self.before));
                CREATE INDEX \(table)_changes ON \(table)(owner, change_seq);
                CREATE TABLE \(tombstones) (
                  id TEXT PRIMARY KEY,
                  owner TEXT NOT NULL,
                  seq INTEGER NOT NULL,
                  deleted_ns INTEGER NOT NULL
                );
                CREATE INDEX \(tombstones)_owner ON \(tombstones)(owner, seq);
                CREATE INDEX \(tombstones)_age ON \(tombstones)(deleted_ns);
                CREATE TABLE \(horizon) (name TEXT PRIMARY KEY, seq INTEGER NOT NULL);
                INSERT INTO \(horizon) (name, seq) VALUES ('pruned', \(Int64.min + 1));
                """)
    }

    /// An item was added with a client's id: a tombstone of an earlier item with the same id (one
    /// deleted, then added again) goes. Random ids cannot meet a tombstone and need not call this.
    public func revived(_ tx: any Transaction, id: String) throws {
        try tx.execute("DELETE FROM \(tombstones) WHERE id = ?", [.text(id)])
    }

    /// Item `id` of `owner` was deleted at sequence `seq` (after its row was deleted).
    public func deleted(_ tx: any Transaction, owner: String, id: String, seq: Int64, now: WallTime) throws {
        try tx.execute(
            """
            INSERT INTO \(tombstones) (id, owner, seq, deleted_ns) VALUES (?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, seq = excluded.seq, deleted_ns = excluded.deleted_ns
            """,
            [.text(id), .text(owner), .integer(seq), .integer(now.nanosecondsSinceEpoch)])
    }

    /// One change: the item's current row, or nil for a deletion.
    public struct Entry: Sendable {
        public var seq: Int64
        public var id: String
        public var row: Row?
    }

    /// A page of changes and where the next pull starts.
    public struct Page: Sendable {
        public var entries: [Entry]
        /// The cursor for the next pull; once `more` is false, also the `since` to subscribe from.
        public var next: Int64
        public var more: Bool
    }

    /// A cursor older than the tombstones kept.
    public struct ResyncNeeded: Error, CustomStringConvertible {
        public let horizon: Int64
        public var description: String { "deletions before sequence \(horizon) are no longer kept; pull again from an empty cursor" }
    }

    /// The owner's changes after `cursor` in sequence order, at most `limit`. No cursor: the
    /// owner's current items (no tombstones: a new client has nothing to delete).
    ///
    /// The log's head (its newest final position, `EventLog.head`) is read first and nothing
    /// after it is returned: nothing can still commit at or below it, so everything up to the
    /// head is visible to the queries that follow, on either engine, and the cursor never
    /// passes a change the page did not include.
    public func page(_ tx: any Transaction, owner: String, after cursor: Int64?, limit: Int) throws -> Page {
        let head = try EventLog.head(tx)
        let after = cursor ?? Int64.min
        if let cursor {
            let pruned = try tx.query("SELECT seq FROM \(horizon) WHERE name = 'pruned'").first?.integer("seq") ?? Int64.min
            guard cursor >= pruned else { throw ResyncNeeded(horizon: pruned) }
        }
        let fetch = Int64(limit + 1)
        // Cut by bytes: the page ends after the last item that fit, tombstones included.
        let (fitting, cut) = try bytes.rows(
            "SELECT * FROM \(table) WHERE owner = ? AND change_seq > ? AND change_seq <= ? ORDER BY change_seq LIMIT ?", orderBy: "change_seq",
            [.text(owner), .integer(after), .integer(max(head, after)), .integer(fetch)], in: tx)
        let cutAfter = cut ? fitting.last?.integer("change_seq") : nil
        var entries = fitting.compactMap { row -> Entry? in
            guard let id = row.text("id"), let seq = row.integer("change_seq") else { return nil }
            return Entry(seq: seq, id: id, row: row)
        }
        if cursor != nil {
            entries += try tx.query(
                "SELECT id, seq FROM \(tombstones) WHERE owner = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                [.text(owner), .integer(after), .integer(head), .integer(fetch)]
            ).compactMap { row -> Entry? in
                guard let id = row.text("id"), let seq = row.integer("seq") else { return nil }
                return Entry(seq: seq, id: id, row: nil)
            }
            entries.sort { $0.seq < $1.seq }
        }
        if let cutAfter { entries.removeAll { $0.seq > cutAfter } }
        let more = cutAfter != nil || entries.count > limit
        let shown = Array(entries.prefix(limit))
        // While rows from before the feed are shown, the cursor is one of their negative sequences.
        let next = more ? (shown.last?.seq ?? after) : max(head, cursor ?? 0)
        return Page(entries: shown, next: next, more: more)
    }

    /// Deletes tombstones older than `age` and raises the horizon to the newest one deleted;
    /// returns how many.
    @discardableResult
    public func prune(_ database: any Database, olderThan age: Duration, now: WallTime = .now()) async throws -> Int {
        let cutoff = now.nanosecondsSinceEpoch - Int64(age.components.seconds) * 1_000_000_000
        let (tombstones, horizon) = (self.tombstones, self.horizon)
        return try await database.write { tx in
            guard let newest = try tx.query("SELECT MAX(seq) AS seq FROM \(tombstones) WHERE deleted_ns < ?", [.integer(cutoff)]).first?.integer("seq")
            else { return 0 }
            try tx.execute("UPDATE \(horizon) SET seq = ? WHERE name = 'pruned' AND seq < ?", [.integer(newest), .integer(newest)])
            return try tx.execute("DELETE FROM \(tombstones) WHERE seq <= ?", [.integer(newest)])
        }
    }

    /// The service that prunes this feed's tombstones older than `keep` (90 days by default),
    /// hourly: a client away longer must pull again from the start.
    public func retention(_ database: any Database, keep: Duration, logger: Logger) -> PeriodicPruning {
        PeriodicPruning(name: table + ".tombstones", interval: .seconds(3600), logger: logger) {
            try await prune(database, olderThan: keep)
        }
    }

    /// One change as a plugin's reply shows it: the item as it stands, or nil for a deletion.
    public struct Change<Item: Sendable>: Sendable {
        public var seq: Int64
        public var id: String
        public var item: Item?
    }

    /// `page`, each row made the plugin's item by `item`.
    public func changes<Item: Sendable>(
        _ tx: any Transaction, owner: String, after cursor: Int64?, limit: Int, item: (Row) -> Item?
    ) throws -> (changes: [Change<Item>], next: Int64, more: Bool) {
        let page = try page(tx, owner: owner, after: cursor, limit: limit)
        return (page.entries.map { Change(seq: $0.seq, id: $0.id, item: $0.row.flatMap(item)) }, page.next, page.more)
    }

    /// Erasure: a deleted account's tombstones.
    public func erase(_ tx: any Transaction, owner: String) throws {
        try tx.execute("DELETE FROM \(tombstones) WHERE owner = ?", [.text(owner)])
    }
}
