// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage

/// The user's memories: owner-scoped rows, each change evented (ids only) in its transaction.
extension ChatRepository {
    /// Where a memory was learnt.
    struct MemorySource: Sendable {
        var conversation: String
        var message: String
        var model: String?
    }

    /// A reply whose user message waits for extraction.
    struct MemoryJob: Sendable {
        var owner: String
        var source: MemorySource
        /// The user's message the reply answered (never the reply's text).
        var userText: String
    }

    static func memory(_ row: Row) -> Memory? {
        guard let id = row.text("id"), let text = row.text("text"), let created = time(row, "created_at"), let updated = time(row, "updated_at") else { return nil }
        return Memory(
            id: id, text: text, conversationId: row.text("conversation_id"), messageId: row.text("message_id"), model: row.text("model"), createdAt: created,
            updatedAt: updated)
    }

    static func ownedMemory(_ tx: any Transaction, owner: String, id: String) throws -> Memory {
        guard let memory = try tx.query("SELECT * FROM chat_memories WHERE id = ? AND owner = ?", [.text(id), .text(owner)]).first.flatMap(Self.memory) else {
            throw ChatError.notFound
        }
        return memory
    }

    /// Newest first.
    func memories(owner: String) async throws -> [Memory] {
        try await database.read { tx in
            try tx.query("SELECT * FROM chat_memories WHERE owner = ? ORDER BY seq DESC", [.text(owner)]).compactMap(Self.memory)
        }
    }

    /// The most recently changed memories that fit `budget` characters, for a request's context.
    func memoriesForContext(owner: String, budget: Int) async throws -> [String] {
        try await database.read { tx in
            var used = 0
            var texts: [String] = []
            for row in try tx.query("SELECT text FROM chat_memories WHERE owner = ? ORDER BY updated_at DESC, seq DESC LIMIT 500", [.text(owner)]) {
                guard let text = row.text("text"), used + TextLimit.characters(of: text) <= budget else { break }
                used += TextLimit.characters(of: text)
                texts.append(text)
            }
            return texts
        }
    }

    func addMemory(owner: String, id: String, text: String, limit: Int, now: Int64, causedBy cause: (any Cause)?) async throws -> Memory {
        try await database.write { tx in
            let held = try tx.query("SELECT COUNT(*) AS n FROM chat_memories WHERE owner = ?", [.text(owner)]).first?.integer("n") ?? 0
            guard held < Int64(limit) else { throw ChatError.memoryFull(limit: limit) }
            try AccountBytes.charge(tx, owner: owner, part: "memories", delta: AccountBytes.size(text), limit: storageLimit)
            try Self.insertMemory(tx, owner: owner, id: id, text: text, source: nil, now: now)
            try tx.append(ChatMemoriesChanged(userId: owner, change: "added", memoryIds: [id]), causedBy: cause)
            let memory = try Self.ownedMemory(tx, owner: owner, id: id)
            try tx.stageReply(ChatInterface.MemoryReply(memory: memory))
            return memory
        }
    }

    func updateMemory(owner: String, id: String, text: String, now: Int64, causedBy cause: (any Cause)?) async throws -> Memory {
        try await database.write { tx in
            let before = try Self.ownedMemory(tx, owner: owner, id: id)
            try AccountBytes.charge(tx, owner: owner, part: "memories", delta: AccountBytes.size(text) - AccountBytes.size(before.text), limit: storageLimit)
            try tx.execute("UPDATE chat_memories SET text = ?, updated_at = ? WHERE id = ?", [.text(text), .integer(now), .text(id)])
            try tx.append(ChatMemoriesChanged(userId: owner, change: "updated", memoryIds: [id]), causedBy: cause)
            let memory = try Self.ownedMemory(tx, owner: owner, id: id)
            try tx.stageReply(ChatInterface.MemoryReply(memory: memory))
            return memory
        }
    }

    func deleteMemory(owner: String, id: String, causedBy cause: (any Cause)?) async throws {
        try await database.write { tx in
            let gone = try Self.ownedMemory(tx, owner: owner, id: id)
            try AccountBytes.charge(tx, owner: owner, part: "memories", delta: -AccountBytes.size(gone.text), limit: storageLimit)
            try tx.execute("DELETE FROM chat_memories WHERE id = ?", [.text(id)])
            try tx.append(ChatMemoriesChanged(userId: owner, change: "deleted", memoryIds: [id]), causedBy: cause)
            try tx.stageReply(Empty())
        }
    }

    func clearMemories(owner: String, causedBy cause: (any Cause)?) async throws -> Int {
        try await database.write { tx in
            let ids = try tx.query("SELECT id FROM chat_memories WHERE owner = ? ORDER BY seq", [.text(owner)]).compactMap { $0.text("id") }
            try AccountBytes.reset(tx, owner: owner, part: "memories")
            try tx.execute("DELETE FROM chat_memories WHERE owner = ?", [.text(owner)])
            if !ids.isEmpty { try tx.append(ChatMemoriesChanged(userId: owner, change: "cleared", memoryIds: ids), causedBy: cause) }
            try tx.stageReply(ChatInterface.ClearMemories.Reply(deleted: ids.count))
            return ids.count
        }
    }

    /// The first `characters` Unicode scalars of what the model proposed (a prefix of
    /// grapheme clusters would let one cluster carry a megabyte).
    /// A model-made memory as kept: control characters (a model can be talked into an escape
    /// sequence) become spaces, then at most `characters` scalars.
    static func cut(_ text: String, _ characters: Int) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(characters).map { $0.properties.generalCategory == .control ? " " : $0 }))
    }

    private static func insertMemory(_ tx: any Transaction, owner: String, id: String, text: String, source: MemorySource?, now: Int64) throws {
        try tx.execute(
            "INSERT INTO chat_memories (id, owner, text, conversation_id, message_id, model, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(id), .text(owner), .text(text), source.map { .text($0.conversation) } ?? .null, source.map { .text($0.message) } ?? .null,
                source?.model.map { .text($0) } ?? .null, .integer(now), .integer(now),
            ])
    }

    // MARK: Extraction

    /// The reply `messageID` if it waits for extraction: its owner, where it was, and the user's
    /// message it answered. nil when it does not wait (memory was off, or it was done already).
    func memoryJob(reply messageID: String) async throws -> MemoryJob? {
        try await database.read { tx in
            guard
                let reply = try tx.query("SELECT * FROM chat_messages WHERE id = ? AND role = 'assistant' AND memory_pending = 1", [.text(messageID)]).first,
                let owner = reply.text("owner"), let conversation = reply.text("conversation_id"), let seq = reply.integer("seq")
            else { return nil }
            let user = try tx.query(
                "SELECT text FROM chat_messages WHERE conversation_id = ? AND role = 'user' AND seq < ? ORDER BY seq DESC LIMIT 1", [.text(conversation), .integer(seq)])
            guard let text = user.first?.text("text") else { return nil }
            return MemoryJob(owner: owner, source: MemorySource(conversation: conversation, message: messageID, model: reply.text("model")), userText: text)
        }
    }

    /// The owner's memories as the extractor sees them (oldest first, as they were learnt).
    func memoryFacts(owner: String) async throws -> [MemoryFact] {
        try await database.read { tx in
            try tx.query("SELECT id, text FROM chat_memories WHERE owner = ? ORDER BY seq", [.text(owner)]).compactMap { row in
                guard let id = row.text("id"), let text = row.text("text") else { return nil }
                return MemoryFact(id: id, text: text)
            }
        }
    }

    /// Applies the extractor's decisions and marks the job done, in one transaction: adds past
    /// `limit` are dropped (the user is told by nothing but the count; logged by the caller).
    /// Returns how many adds were dropped.
    func applyMemories(
        _ decisions: [MemoryDecision], job: MemoryJob, limit: Int, maxCharacters: Int, newID: () throws -> String, now: Int64, causedBy cause: (any Cause)?
    ) async throws -> Int {
        var ids: [String] = []
        for decision in decisions { if case .add = decision { ids.append(try newID()) } }
        let newIDs = ids
        return try await database.write { tx in
            try tx.execute("UPDATE chat_messages SET memory_pending = 0 WHERE id = ?", [.text(job.source.message)])
            var held = try tx.query("SELECT COUNT(*) AS n FROM chat_memories WHERE owner = ?", [.text(job.owner)]).first?.integer("n") ?? 0
            var added: [String] = [], updated: [String] = [], deleted: [String] = []
            var dropped = 0
            var fresh = newIDs.makeIterator()
            for decision in decisions {
                switch decision {
                case .add(let text):
                    guard let id = fresh.next() else { continue }
                    guard held < Int64(limit) else {
                        dropped += 1
                        continue
                    }
                    let kept = Self.cut(text, maxCharacters)
                    try AccountBytes.charge(tx, owner: job.owner, part: "memories", delta: AccountBytes.size(kept), limit: 0)
                    try Self.insertMemory(tx, owner: job.owner, id: id, text: kept, source: job.source, now: now)
                    held += 1
                    added.append(id)
                case .update(let id, let text):
                    let kept = Self.cut(text, maxCharacters)
                    let old = try tx.query("SELECT text FROM chat_memories WHERE id = ? AND owner = ?", [.text(id), .text(job.owner)]).first?.text("text")
                    let changed = try tx.execute(
                        "UPDATE chat_memories SET text = ?, updated_at = ?, model = ? WHERE id = ? AND owner = ?",
                        [.text(kept), .integer(now), job.source.model.map { .text($0) } ?? .null, .text(id), .text(job.owner)])
                    if changed > 0 {
                        updated.append(id)
                        try AccountBytes.charge(tx, owner: job.owner, part: "memories", delta: AccountBytes.size(kept) - AccountBytes.size(old), limit: 0)
                    }
                case .delete(let id):
                    let old = try tx.query("SELECT text FROM chat_memories WHERE id = ? AND owner = ?", [.text(id), .text(job.owner)]).first?.text("text")
                    try AccountBytes.charge(tx, owner: job.owner, part: "memories", delta: -AccountBytes.size(old), limit: 0)
                    let changed = try tx.execute("DELETE FROM chat_memories WHERE id = ? AND owner = ?", [.text(id), .text(job.owner)])
                    if changed > 0 {
                        deleted.append(id)
                        held -= 1
                    }
                }
            }
            for (change, ids) in [("added", added), ("updated", updated), ("deleted", deleted)] where !ids.isEmpty {
                try tx.append(ChatMemoriesChanged(userId: job.owner, change: change, memoryIds: ids), causedBy: cause)
            }
            return dropped
        }
    }

    /// Marks a reply's extraction done without changing memories (memory was turned off, or
    /// the extractor failed).
    func skipMemoryJob(reply messageID: String) async throws {
        try await database.write { tx in try tx.execute("UPDATE chat_messages SET memory_pending = 0 WHERE id = ?", [.text(messageID)]) }
    }
}
