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
    ]
}
