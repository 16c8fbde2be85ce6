// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage

/// Conversations' own changes: each logs its event, records its place in the change feed,
/// raises the version, and stages the method's reply for a keyed call — in one transaction.
extension ChatRepository {
    /// Creates a conversation unless the owner already holds `limit` (`QuotaExceeded`). With a
    /// client's id, one that exists with the same title is returned, with another is a Conflict.
    func createConversation(
        owner: String, id: String, clientChosen: Bool, title: String?, temporary: Bool, now: Int64, limit: Int, causedBy cause: (any Cause)?
    ) async throws -> Conversation {
        try await database.write { tx in
            if clientChosen, let existing = try tx.query("SELECT * FROM chat_conversations WHERE id = ?", [.text(id)]).first {
                guard existing.text("owner") == owner, let current = Self.conversation(existing) else {
                    throw ChatError.validation("id", "is taken; make a new UUID")
                }
                guard existing.text("title") == title else { throw ChatError.conflict(conversation: current) }
                try tx.stageReply(ChatInterface.ConversationReply(conversation: current))
                return current
            }
            let held = try tx.query("SELECT COUNT(*) AS n FROM chat_conversations WHERE owner = ?", [.text(owner)]).first?.integer("n") ?? 0
            guard held < Int64(limit) else { throw ChatError.quotaExceeded(limit: limit) }
            // The event first: its sequence is the conversation's place in the change feed.
            let seq = try tx.appendLogged(ChatConversationCreated(userId: owner, conversationId: id), causedBy: cause)
            try tx.execute(
                "INSERT INTO chat_conversations (id, owner, title, created_at, updated_at, version, change_seq, temporary) VALUES (?, ?, ?, ?, ?, 1, ?, ?)",
                [.text(id), .text(owner), title.map { .text($0) } ?? .null, .integer(now), .integer(now), .integer(seq), .integer(temporary ? 1 : 0)])
            if clientChosen { try Self.feed.revived(tx, id: id) }
            let created = WallTime(nanosecondsSinceEpoch: now).rfc3339
            let conversation = Conversation(id: id, title: title, createdAt: created, updatedAt: created, version: 1, temporary: temporary)
            try tx.stageReply(ChatInterface.ConversationReply(conversation: conversation))
            return conversation
        }
    }

    func rename(owner: String, id: String, title: String, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> Conversation {
        try await database.write { tx in
            try Self.check(tx, owner: owner, id: id, expected: expected)
            let seq = try tx.appendLogged(ChatConversationRenamed(userId: owner, conversationId: id), causedBy: cause)
            try tx.execute(
                "UPDATE chat_conversations SET title = ?, updated_at = ?, version = version + 1, change_seq = ? WHERE id = ?",
                [.text(title), .integer(now), .integer(seq), .text(id)])
            guard let conversation = Self.conversation(try Self.ownedConversation(tx, owner: owner, id: id)) else { throw ChatError.notFound }
            try tx.stageReply(ChatInterface.ConversationReply(conversation: conversation))
            return conversation
        }
    }

    func deleteConversation(owner: String, id: String, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws {
        try await database.write { tx in
            try Self.check(tx, owner: owner, id: id, expected: expected)
            let freed =
                try tx.query(
                    "SELECT \(AccountBytes.sizeSQL("text", tx.dialect)) AS bytes FROM chat_messages WHERE conversation_id = ?", [.text(id)]
                ).first?.integer("bytes") ?? 0
            try AccountBytes.charge(tx, owner: owner, part: "chat", delta: -freed, limit: storageLimit)
            try tx.execute("DELETE FROM chat_messages WHERE conversation_id = ?", [.text(id)])
            try tx.execute("DELETE FROM chat_conversations WHERE id = ?", [.text(id)])
            let seq = try tx.appendLogged(ChatConversationDeleted(userId: owner, conversationId: id), causedBy: cause)
            try Self.feed.deleted(tx, owner: owner, id: id, seq: seq, now: WallTime(nanosecondsSinceEpoch: now))
            try tx.stageReply(Empty())
        }
    }

    func changes(owner: String, after cursor: Int64?, limit: Int) async throws -> ChatInterface.Changes.Reply {
        // The caller's own writes are in the page (see `EventLog.settle`).
        try await EventLog(database: database).settle()
        return try await database.read { tx in
            do {
                let page = try Self.feed.changes(tx, owner: owner, after: cursor, limit: limit, item: Self.conversation)
                let changes = page.changes.map { ConversationChange(seq: $0.seq, id: $0.id, deleted: $0.item == nil, conversation: $0.item) }
                return .init(changes: changes, nextCursor: page.next, more: page.more)
            } catch let stale as ChangeFeed.ResyncNeeded {
                throw ChatError.resyncRequired(reason: stale.description)
            }
        }
    }

    /// The owner's conversation exists and, when `expected` is given, is at that version
    /// (else a Conflict carrying it).
    static func check(_ tx: any Transaction, owner: String, id: String, expected: Int64?) throws {
        let row = try ownedConversation(tx, owner: owner, id: id)
        if let expected, let current = conversation(row), current.version != expected { throw ChatError.conflict(conversation: current) }
    }
}
