// SPDX-License-Identifier: Apache-2.0
import PluginKit
import Storage

/// The todos plugin's tables: one migration per schema version, applied in order by the
/// plugin host when the plugin starts (the version reached is recorded per plugin). A shipped
/// migration is never edited; a change is a new version.
enum TodosMigrations {
    static let all = [
        Migration(
            plugin: "todos", version: 1,
            sql: """
                CREATE TABLE todos (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  id TEXT NOT NULL UNIQUE,
                  owner TEXT NOT NULL,
                  title TEXT NOT NULL,
                  notes TEXT,
                  done INTEGER NOT NULL DEFAULT 0,
                  due_at INTEGER,
                  created_at INTEGER NOT NULL,
                  updated_at INTEGER NOT NULL,
                  completed_at INTEGER
                );
                CREATE INDEX todos_owner ON todos(owner, seq);
                """),
        // How many todos each account holds, kept with every add and delete, so the quota is
        // checked in constant time however many an account has.
        Migration(
            plugin: "todos", version: 2,
            sql: """
                CREATE TABLE todos_counts (
                  owner TEXT PRIMARY KEY,
                  n INTEGER NOT NULL
                );
                INSERT INTO todos_counts (owner, n) SELECT owner, COUNT(*) FROM todos GROUP BY owner;
                """),
        // Offline clients: a version per todo (every change raises it; a client's expected
        // version that differs is a Conflict).
        Migration(plugin: "todos", version: 3, sql: "ALTER TABLE todos ADD COLUMN version INTEGER NOT NULL DEFAULT 1;"),
        // The per-owner change feed (`Todos.Changes`): each todo's place on the event log's
        // sequence, tombstones of deleted ones.
        SQLTodosRepository.feed.migration(plugin: "todos", version: 4, existingOrder: "seq"),
        // The counts' key is the row (`WITHOUT ROWID`): an add touches one b-tree for its count,
        // not a table and its key's index. PostgreSQL's tables are unchanged.
        Migration(
            plugin: "todos", version: 5,
            sql: """
                ALTER TABLE todos_counts RENAME TO todos_counts_old;
                CREATE TABLE todos_counts (
                  owner TEXT PRIMARY KEY,
                  n INTEGER NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO todos_counts (owner, n) SELECT owner, n FROM todos_counts_old;
                DROP TABLE todos_counts_old;
                """, postgres: "SELECT 1;"),
        // Files attached to a todo (file ids of the files plugin, comma-separated).
        Migration(plugin: "todos", version: 6, sql: "ALTER TABLE todos ADD COLUMN attachments TEXT"),
        // Fewer b-trees per add (six with the event log's two and the account's row): the
        // counts move into the account's byte row (`appd_account_bytes.items`); SQLite's todos
        // are keyed by owner and place (`WITHOUT ROWID`), so an owner's list is the table's own
        // order and needs no index of its own, and no `AUTOINCREMENT` (`sqlite_sequence`) —
        // a new todo's place is its created event's sequence (`SQLTodosRepository.inserting`).
        // PostgreSQL's todos are unchanged.
        Migration(
            plugin: "todos", version: 7,
            sql: """
                INSERT INTO appd_account_bytes (owner, part, bytes, items) SELECT owner, 'todos', 0, n FROM todos_counts WHERE true
                  ON CONFLICT(owner, part) DO UPDATE SET items = excluded.items;
                DROP TABLE todos_counts;
                ALTER TABLE todos RENAME TO todos_rowid;
                CREATE TABLE todos (
                  owner TEXT NOT NULL,
                  seq INTEGER NOT NULL,
                  id TEXT NOT NULL UNIQUE,
                  title TEXT NOT NULL,
                  notes TEXT,
                  done INTEGER NOT NULL DEFAULT 0,
                  due_at INTEGER,
                  created_at INTEGER NOT NULL,
                  updated_at INTEGER NOT NULL,
                  completed_at INTEGER,
                  version INTEGER NOT NULL DEFAULT 1,
                  change_seq INTEGER NOT NULL DEFAULT 0,
                  attachments TEXT,
                  PRIMARY KEY (owner, seq)
                ) WITHOUT ROWID;
                INSERT INTO todos (\(columns)) SELECT \(columns) FROM todos_rowid;
                DROP TABLE todos_rowid;
                CREATE INDEX todos_changes ON todos(owner, change_seq);
                """,
            postgres: """
                INSERT INTO appd_account_bytes (owner, part, bytes, items) SELECT owner, 'todos', 0, n FROM todos_counts
                  ON CONFLICT (owner, part) DO UPDATE SET items = excluded.items;
                DROP TABLE todos_counts;
                """),
    ]

    /// Every column of todos (migration 7 copies them).
    private static let columns = "owner, seq, id, title, notes, done, due_at, created_at, updated_at, completed_at, version, change_seq, attachments"
}
