// SPDX-License-Identifier: Apache-2.0
import Storage

/// The files plugin's tables: what each stored file is and whose (the bytes are in `FileBlobs`).
enum FilesMigrations {
    static let all = [
        Migration(
            plugin: "files", version: 1,
            sql: """
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
                """),
        // Resumable uploads (tus 1.0): the bytes received so far are in `.incoming/<id>`.
        Migration(
            plugin: "files", version: 2,
            sql: """
                CREATE TABLE files_uploads (
                  id TEXT PRIMARY KEY,
                  owner TEXT NOT NULL,
                  length INTEGER NOT NULL,
                  received INTEGER NOT NULL DEFAULT 0,
                  name TEXT,
                  content_type TEXT,
                  created_ns INTEGER NOT NULL,
                  expires_ns INTEGER NOT NULL,
                  file_id TEXT
                );
                CREATE INDEX files_uploads_owner ON files_uploads(owner);
                CREATE INDEX files_uploads_expires ON files_uploads(expires_ns);
                """),
        // The sides of the thumbnails made of a file, comma-separated (`256,1024`).
        Migration(plugin: "files", version: 3, sql: "ALTER TABLE files ADD COLUMN thumbnails TEXT NOT NULL DEFAULT ''"),
        // The item a file goes with (`AttachFile`: `auth.avatar`, `chat.<conversation>`, …).
        Migration(
            plugin: "files", version: 4,
            sql: """
                ALTER TABLE files ADD COLUMN used_by TEXT;
                CREATE INDEX files_owner_used_by ON files(owner, used_by);
                """),
    ]
}
