// SPDX-License-Identifier: Apache-2.0
import Storage

/// The files plugin's tables: what each stored file is and whose (the bytes are in `FileBlobs`).
enum FilesMigrations {
    static let all = [
        Migration(plugin: "files", version: 1, sql: """
            CREATE TABLE files (
              id TEXT PRIMARY KEY,
              owner TEXT NOT NULL,
              name TEXT NOT NULL,
              content_type TEXT NOT NULL,
              bytes INTEGER NOT NULL,
              sha256 TEXT NOT NULL,
              width INTEGER,
              height INTEGER,
              created_ns INTEGER NOT NULL,
              idempotency_key TEXT
            );
            CREATE INDEX files_owner_created ON files(owner, created_ns, id);
            CREATE UNIQUE INDEX files_owner_key ON files(owner, idempotency_key);
            """)
    ]
}
