// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage

/// The chat tables: conversations and messages, owner-scoped (another user's rows are simply
/// not found), events appended in the same transaction as the change.
struct ChatRepository: Sendable {
    let database: any Database
    /// The bytes of text one account may keep, across plugins (`AccountBytes`; 0: no limit).
    var storageLimit: Int64 = 0
    /// The per-owner change feed over conversations (migration 3).
    static let feed = ChangeFeed(table: "chat_conversations", measured: ["title"])

    static func time(_ row: Row, _ column: String) -> String? { row.integer(column).map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 } }

    static func conversation(_ row: Row) -> Conversation? {
        guard let id = row.text("id"), let created = time(row, "created_at"), let updated = time(row, "updated_at") else { return nil }
        return Conversation(
            id: id, title: row.text("title"), createdAt: created, updatedAt: updated, version: row.integer("version") ?? 1, temporary: row.integer("temporary") == 1)
    }

    static func message(_ row: Row) -> ChatMessage? {
        guard let id = row.text("id"), let conversation = row.text("conversation_id"), let role = row.text("role"), let text = row.text("text"),
            let status = row.text("status"), let created = time(row, "created_at")
        else { return nil }
        var usage: Usage?
        if let prompt = row.integer("prompt_tokens"), let completion = row.integer("completion_tokens") {
            usage = Usage(promptTokens: Int(prompt), completionTokens: Int(completion))
        }
        return ChatMessage(
            id: id, conversationId: conversation, role: role, text: text, status: status, error: row.text("error"), usage: usage,
            feedback: row.text("feedback"), model: row.text("model"), images: Self.images(row), createdAt: created)
    }

    /// A message's images (`images`, comma-separated file ids); nil when none.
    static func images(_ row: Row) -> [String]? {
        guard let text = row.text("images"), !text.isEmpty else { return nil }
        return text.split(separator: ",").map(String.init)
    }

    /// The full id of the owner's conversation for an id or a unique prefix of it (4 or more
    /// characters, any case), as todos take them.
    /// With or without its `c_`, as todos take theirs: text that begins with `c_` is tried as
    /// given first, then as the part after the `c_`.
    func resolveConversation(owner: String, id given: String, field: String) async throws -> String {
        guard given.lowercased().hasPrefix("c_") else { return try await lookupConversation(owner: owner, id: "c_" + given, field: field) }
        do {
            return try await lookupConversation(owner: owner, id: given, field: field)
        } catch let error as ChatError where error == .notFound {
            return try await lookupConversation(owner: owner, id: "c_" + given, field: field)
        }
    }

    private func lookupConversation(owner: String, id: String, field: String) async throws -> String {
        try await database.read { tx in
            if try tx.query("SELECT id FROM chat_conversations WHERE id = ? AND owner = ?", [.text(id), .text(owner)]).first != nil { return id }
            guard id.utf8.count >= 4 else { throw ChatError.validation(field, "is too short: give at least 4 characters of it (c_ and two more)") }
            let rows = try tx.query(
                "SELECT id FROM chat_conversations WHERE owner = ? AND lower(substr(id, 1, ?)) = lower(?) LIMIT 10",
                [.text(owner), .integer(Int64(id.utf8.count)), .text(id)])
            guard let full = rows.first?.text("id") else { throw ChatError.notFound }
            guard rows.count == 1 else {
                throw ChatError.validation(field, "is ambiguous: it matches \(rows.count == 10 ? "10 or more" : String(rows.count)) conversations; give more characters")
            }
            return full
        }
    }

    /// The owner's conversation by its full id (handlers resolve prefixes first).
    static func ownedConversation(_ tx: any Transaction, owner: String, id: String) throws -> Row {
        guard let row = try tx.query("SELECT * FROM chat_conversations WHERE id = ? AND owner = ?", [.text(id), .text(owner)]).first else {
            throw ChatError.notFound
        }
        return row
    }

    /// Conversations with a position below `before`, newest first, each with its position.
    func listConversations(owner: String, query: String?, before: Int64, limit: Int) async throws -> [(Int64, Conversation)] {
        try await database.read { tx in
            var sql = "SELECT * FROM chat_conversations WHERE owner = ? AND seq < ?"
            var parameters: [SQLValue] = [.text(owner), .integer(before)]
            if let query, !query.isEmpty {
                // Case-insensitive on both engines (SQLite's LIKE is, for ASCII; PostgreSQL's is not).
                sql += tx.dialect == .postgres ? " AND title ILIKE ? ESCAPE '\\'" : " AND title LIKE ? ESCAPE '\\'"
                let escaped = query.replacing("\\", with: "\\\\").replacing("%", with: "\\%").replacing("_", with: "\\_")
                parameters.append(.text("%\(escaped)%"))
            }
            sql += " ORDER BY seq DESC LIMIT ?"
            parameters.append(.integer(Int64(limit)))
            return try tx.query(sql, parameters).compactMap { row in
                guard let seq = row.integer("seq"), let conversation = Self.conversation(row) else { return nil }
                return (seq, conversation)
            }
        }
    }

    /// A page of history ends at this many bytes of message text, or at its count.
    static let historyPage = BytePage(columns: ["text"])

    /// Messages before `before`, newest first, at most `limit`, and whether the byte budget
    /// ended the page before that.
    func history(owner: String, conversation: String, before: Int64, limit: Int) async throws -> (messages: [(Int64, ChatMessage)], cut: Bool) {
        try await database.read { tx in
            _ = try Self.ownedConversation(tx, owner: owner, id: conversation)
            let (rows, cut) = try Self.historyPage.rows(
                "SELECT * FROM chat_messages WHERE conversation_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?", orderBy: "seq DESC",
                [.text(conversation), .integer(before), .integer(Int64(limit))], in: tx)
            let messages = rows.compactMap { row -> (Int64, ChatMessage)? in
                guard let seq = row.integer("seq"), let message = Self.message(row) else { return nil }
                return (seq, message)
            }
            return (messages, cut)
        }
    }

    /// Commits the user's message (and `chat.messageSent`) before the provider is called.
    /// A conversation without a title takes the first words of its first message.
    func addUserMessage(
        owner: String, conversation: String, id: String, text: String, images: [String] = [], now: Int64, causedBy cause: (any Cause)?
    ) async throws -> ChatMessage {
        try await database.write { tx in
            let row = try Self.ownedConversation(tx, owner: owner, id: conversation)
            try AccountBytes.charge(tx, owner: owner, part: "chat", delta: AccountBytes.size(text), limit: storageLimit)
            try tx.execute(
                "INSERT INTO chat_messages (id, conversation_id, owner, role, text, status, images, created_at) VALUES (?, ?, ?, 'user', ?, 'complete', ?, ?)",
                [.text(id), .text(conversation), .text(owner), .text(text), images.isEmpty ? .null : .text(images.joined(separator: ",")), .integer(now)])
            if row.text("title") == nil {
                let words = text.split(whereSeparator: { $0.isWhitespace }).prefix(8).joined(separator: " ")
                try tx.execute("UPDATE chat_conversations SET title = ? WHERE id = ?", [.text(String(words.prefix(80))), .text(conversation)])
            }
            let seq = try tx.appendLogged(ChatMessageSent(userId: owner, conversationId: conversation, messageId: id, text: text), causedBy: cause)
            try tx.execute(
                "UPDATE chat_conversations SET updated_at = ?, version = version + 1, change_seq = ? WHERE id = ?",
                [.integer(now), .integer(seq), .text(conversation)])
            guard let message = try tx.query("SELECT * FROM chat_messages WHERE id = ?", [.text(id)]).first.flatMap(Self.message) else {
                throw ChatError.notFound
            }
            return message
        }
    }

    /// The most recent messages of the conversation that fit `budget` characters (Unicode
    /// scalars, so combining marks count), each with its images as file ids, oldest
    /// first (failed replies with no text are left out).
    func context(owner: String, conversation: String, budget: Int) async throws -> [ChatTurn] {
        try await database.read { tx in
            _ = try Self.ownedConversation(tx, owner: owner, id: conversation)
            var turns: [ChatTurn] = []
            var used = 0
            for row in try tx.query("SELECT role, text, images FROM chat_messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 500", [.text(conversation)]) {
                guard let text = row.text("text"), !text.isEmpty, let role = row.text("role").flatMap(ChatTurn.Role.init(rawValue:)) else { continue }
                // The newest message always goes in, even past the budget.
                let size = TextLimit.characters(of: text)
                if !turns.isEmpty && used + size > budget { break }
                used += size
                turns.append(ChatTurn(role: role, text: text, images: Self.images(row) ?? []))
            }
            return turns.reversed()
        }
    }

    /// Whether the owner's conversation is temporary (reads and writes no memories).
    func isTemporary(owner: String, conversation: String) async throws -> Bool {
        try await database.read { tx in try Self.ownedConversation(tx, owner: owner, id: conversation).integer("temporary") == 1 }
    }

    /// Commits the assistant's message with its final status and model, and its event;
    /// `memoryPending`: its user message waits for memory extraction.
    func finishReply(
        owner: String, conversation: String, id: String, text: String, status: String, error: String?, usage: Usage?, model: String?,
        memoryPending: Bool, now: Int64, causedBy cause: (any Cause)?
    ) async throws -> ChatMessage {
        try await database.write { tx in
            _ = try Self.ownedConversation(tx, owner: owner, id: conversation)
            // Counted, never refused: the user's message that asked for it was within the quota.
            try AccountBytes.charge(tx, owner: owner, part: "chat", delta: AccountBytes.size(text), limit: 0)
            try tx.execute(
                """
                INSERT INTO chat_messages (id, conversation_id, owner, role, text, status, error, prompt_tokens, completion_tokens, model, memory_pending, created_at)
                VALUES (?, ?, ?, 'assistant', ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(id), .text(conversation), .text(owner), .text(text), .text(status), error.map { .text($0) } ?? .null,
                    usage.map { .integer(Int64($0.promptTokens)) } ?? .null, usage.map { .integer(Int64($0.completionTokens)) } ?? .null,
                    model.map { .text($0) } ?? .null, .integer(memoryPending ? 1 : 0), .integer(now),
                ])
            let tokens = usage.map { ChatTokenUsage(promptTokens: $0.promptTokens, completionTokens: $0.completionTokens) }
            let seq =
                status == "failed"
                ? try tx.appendLogged(ChatReplyFailed(userId: owner, conversationId: conversation, messageId: id, reason: error, usage: tokens), causedBy: cause)
                : try tx.appendLogged(ChatReplyCompleted(userId: owner, conversationId: conversation, messageId: id, status: status, usage: tokens), causedBy: cause)
            try tx.execute(
                "UPDATE chat_conversations SET updated_at = ?, version = version + 1, change_seq = ? WHERE id = ?",
                [.integer(now), .integer(seq), .text(conversation)])
            guard let message = try tx.query("SELECT * FROM chat_messages WHERE id = ?", [.text(id)]).first.flatMap(Self.message) else {
                throw ChatError.notFound
            }
            return message
        }
    }

    func feedback(owner: String, message: String, rating: String, causedBy cause: (any Cause)?) async throws {
        try await database.write { tx in
            guard let row = try tx.query("SELECT conversation_id FROM chat_messages WHERE id = ? AND owner = ? AND role = 'assistant'", [.text(message), .text(owner)]).first
            else { throw ChatError.notFound }
            try tx.execute("UPDATE chat_messages SET feedback = ? WHERE id = ?", [.text(rating), .text(message)])
            try tx.append(
                ChatFeedbackGiven(userId: owner, conversationId: row.text("conversation_id") ?? "", messageId: message, rating: rating), causedBy: cause)
        }
    }

    /// Erases a deleted account's conversations, messages, memories and tombstones.
    func eraseUser(_ owner: String) async throws {
        try await database.write { tx in
            try Self.feed.erase(tx, owner: owner)
            try AccountBytes.reset(tx, owner: owner, part: "chat")
            try AccountBytes.reset(tx, owner: owner, part: "memories")
            try tx.execute("DELETE FROM chat_messages WHERE owner = ?", [.text(owner)])
            try tx.execute("DELETE FROM chat_memories WHERE owner = ?", [.text(owner)])
            try tx.execute("DELETE FROM chat_conversations WHERE owner = ?", [.text(owner)])
        }
    }
}
