// SPDX-License-Identifier: Apache-2.0
import PluginKit
import Storage

/// The chat plugin's tables: one migration per schema version, applied in order by the
/// plugin host when the plugin starts (the version reached is recorded per plugin). A shipped
/// migration is never edited; a change is a new version.
enum ChatMigrations {
    static let all = [
        Migration(
            plugin: "chat", version: 1,
            sql: """
                CREATE TABLE chat_conversations (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  id TEXT NOT NULL UNIQUE,
                  owner TEXT NOT NULL,
                  title TEXT,
                  created_at INTEGER NOT NULL,
                  updated_at INTEGER NOT NULL
                );
                CREATE INDEX chat_conversations_owner ON chat_conversations(owner, seq);
                CREATE TABLE chat_messages (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  id TEXT NOT NULL UNIQUE,
                  conversation_id TEXT NOT NULL REFERENCES chat_conversations(id) ON DELETE CASCADE,
                  owner TEXT NOT NULL,
                  role TEXT NOT NULL,
                  text TEXT NOT NULL,
                  status TEXT NOT NULL,
                  error TEXT,
                  prompt_tokens INTEGER,
                  completion_tokens INTEGER,
                  feedback TEXT,
                  created_at INTEGER NOT NULL
                );
                CREATE INDEX chat_messages_conversation ON chat_messages(conversation_id, seq);
                CREATE INDEX chat_messages_owner ON chat_messages(owner);
                """),
        // Offline clients: a version per conversation (every change raises it: a rename, a
        // message, a reply), checked against the one a client expects.
        Migration(plugin: "chat", version: 2, sql: "ALTER TABLE chat_conversations ADD COLUMN version INTEGER NOT NULL DEFAULT 1;"),
        // The per-owner change feed of conversations (`Chat.Changes`).
        ChatRepository.feed.migration(plugin: "chat", version: 3, existingOrder: "seq"),
        // Memories (kept apart from conversations: deleting one keeps what was learnt from it),
        // temporary conversations, the model of each reply, and the replies whose user message
        // waits for memory extraction (set only when memory was on for the conversation).
        Migration(
            plugin: "chat", version: 4,
            sql: """
                CREATE TABLE chat_memories (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  id TEXT NOT NULL UNIQUE,
                  owner TEXT NOT NULL,
                  text TEXT NOT NULL,
                  conversation_id TEXT,
                  message_id TEXT,
                  model TEXT,
                  created_at INTEGER NOT NULL,
                  updated_at INTEGER NOT NULL
                );
                CREATE INDEX chat_memories_owner ON chat_memories(owner, seq);
                ALTER TABLE chat_conversations ADD COLUMN temporary INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE chat_messages ADD COLUMN model TEXT;
                ALTER TABLE chat_messages ADD COLUMN memory_pending INTEGER NOT NULL DEFAULT 0;
                """),
        // A user message's images (file ids of the files plugin, comma-separated).
        Migration(plugin: "chat", version: 5, sql: "ALTER TABLE chat_messages ADD COLUMN images TEXT"),
    ]
}
