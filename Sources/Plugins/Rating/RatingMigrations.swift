// SPDX-License-Identifier: Apache-2.0
import Storage

/// The rating plugin's tables: one migration per schema version, applied in order by the
/// plugin host when the plugin starts (the version reached is recorded per plugin). A shipped
/// migration is never edited; a change is a new version.
enum RatingMigrations {
    static let all = [
        Migration(
            plugin: "rating", version: 1,
            sql: """
                CREATE TABLE rating_users (
                  user_id TEXT PRIMARY KEY,
                  first_seen INTEGER NOT NULL,
                  sessions INTEGER NOT NULL DEFAULT 0,
                  positives INTEGER NOT NULL DEFAULT 0,
                  negatives INTEGER NOT NULL DEFAULT 0,
                  positives_since_prompt INTEGER NOT NULL DEFAULT 0,
                  last_negative_at INTEGER,
                  last_prompt_at INTEGER,
                  sentiment REAL NOT NULL DEFAULT 0,
                  sentiment_samples INTEGER NOT NULL DEFAULT 0,
                  suggested INTEGER NOT NULL DEFAULT 0,
                  last_seq INTEGER NOT NULL DEFAULT 0
                );
                CREATE TABLE rating_prompts (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  user_id TEXT NOT NULL,
                  app_version TEXT NOT NULL,
                  outcome TEXT NOT NULL,
                  at INTEGER NOT NULL,
                  UNIQUE (user_id, app_version, outcome)
                );
                """)
    ]
}
