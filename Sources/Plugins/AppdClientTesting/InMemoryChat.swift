// SPDX-License-Identifier: Apache-2.0
import AppdClient
import BusCore
import Contracts
import Foundation

/// Conversations in memory, with a scripted assistant: `send` stores the user's message, then
/// streams `reply(text)` word by word as appd streams a model's reply (the id first, then the
/// pieces, then the stored message). `failNextSend(with:)` makes the next send fail (a 402
/// paywall, say). Conversations follow appd's rules for an offline list: versions, conflicts,
/// idempotency keys, a change feed with tombstones and live signals. For a chat view model's
/// tests.
public actor InMemoryChat: ChatServing {
    private var conversations: [String: Conversation] = [:]
    private var messages: [String: [ChatMessage]] = [:]
    private var nextFailure: (any Error)?
    private let reply: @Sendable (String) -> String
    private var feed = FakeChangeFeed()
    private var outcomes = FakeOutcomes<Conversation?>()

    public init(reply: @escaping @Sendable (String) -> String = { "You said: \($0)" }) {
        self.reply = reply
    }

    /// The next `send` throws `error` before anything is stored.
    public func failNextSend(with error: any Error) { nextFailure = error }

    public func createConversation(title: String?, id: String?, temporary: Bool, idempotencyKey: String?) throws -> Conversation {
        try once(idempotencyKey) {
            let id = id ?? Conversation.newID()
            if let existing = conversations[id] {
                guard existing.title == title else { throw ChatError.conflict(conversation: existing) }
                return existing
            }
            let now = WallTime.now().rfc3339
            let conversation = Conversation(id: id, title: title, createdAt: now, updatedAt: now, version: 1, temporary: temporary)
            conversations[id] = conversation
            if !temporary { record(id, deleted: false) }
            return conversation
        }!
    }

    public func conversations(query: String?, cursor: String?, limit: Int?) -> ChatInterface.ListConversations.Reply {
        let all = conversations.values.filter { query == nil || ($0.title ?? "").localizedCaseInsensitiveContains(query!) }
            .sorted { ($0.updatedAt, $0.id) > ($1.updatedAt, $1.id) }
        return ChatInterface.ListConversations.Reply(conversations: Array(all.prefix(limit ?? 50)))
    }

    public func rename(conversationId: String, title: String, expectedVersion: Int64?, idempotencyKey: String?) throws -> Conversation {
        try once(idempotencyKey) {
            guard var conversation = conversations[conversationId] else { throw ChatError.notFound }
            if let expectedVersion, expectedVersion != conversation.version { throw ChatError.conflict(conversation: conversation) }
            conversation.title = title
            conversation.version += 1
            conversation.updatedAt = WallTime.now().rfc3339
            conversations[conversationId] = conversation
            record(conversationId, deleted: false)
            return conversation
        }!
    }

    public func delete(conversationId: String, expectedVersion: Int64?, idempotencyKey: String?) throws {
        _ = try once(idempotencyKey) {
            guard let conversation = conversations[conversationId] else { throw ChatError.notFound }
            if let expectedVersion, expectedVersion != conversation.version { throw ChatError.conflict(conversation: conversation) }
            conversations[conversationId] = nil
            messages[conversationId] = nil
            record(conversationId, deleted: true)
            return nil
        }
    }

    public func conversationChanges(after cursor: Int64?, limit: Int?) -> ChatInterface.Changes.Reply {
        let page = feed.page(after: cursor, limit: limit)
        let changes = page.changes.map {
            ConversationChange(seq: $0.seq, id: $0.id, deleted: $0.deleted, conversation: $0.deleted ? nil : conversations[$0.id])
        }
        return ChatInterface.Changes.Reply(changes: changes, nextCursor: page.nextCursor, more: page.more)
    }

    public nonisolated func conversationSignals(after cursor: Int64) -> AsyncThrowingStream<Int64, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Int64.self, throwing: (any Error).self)
        // Unstructured: the stream is returned synchronously; the listener is registered on the actor in this hop.
        Task { await self.listen(continuation, after: cursor) }
        return stream
    }

    public func history(conversationId: String, cursor: String?, limit: Int?) throws -> ChatInterface.History.Reply {
        guard conversations[conversationId] != nil else { throw ChatError.notFound }
        return ChatInterface.History.Reply(messages: messages[conversationId] ?? [])
    }

    public nonisolated func send(conversationId: String, text: String, model: String?, images: [String]) -> AsyncThrowingStream<SendReply, any Error> {
        AsyncThrowingStream { continuation in
            // Unstructured: the stream's producer (AsyncThrowingStream's builder is synchronous); cancelled when the consumer stops.
            let task = Task {
                do {
                    let (id, words) = try await self.start(conversationId: conversationId, text: text, images: images)
                    continuation.yield(SendReply(messageId: id))
                    var sent = ""
                    for word in words {
                        try Task.checkCancellation()
                        sent += word
                        continuation.yield(SendReply(messageId: id, delta: word))
                        await Task.yield()
                    }
                    let message = await self.finish(conversationId: conversationId, messageId: id, text: sent, model: model)
                    continuation.yield(SendReply(messageId: id, message: message))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func cancel(messageId: String) {}

    // MARK: -

    private func listen(_ continuation: AsyncThrowingStream<Int64, any Error>.Continuation, after cursor: Int64) {
        let id = feed.listen(continuation, after: cursor)
        // Unstructured: `onTermination` is synchronous: this hops onto the actor to forget the listener.
        continuation.onTermination = { _ in Task { await self.forget(id) } }
    }

    private func forget(_ id: Int) { feed.forget(id) }

    private func record(_ id: String, deleted: Bool) { feed.record(id, deleted: deleted) }

    /// The first outcome of a call with `key`, for every retry with it.
    private func once(_ key: String?, _ body: () throws -> Conversation?) throws -> Conversation? {
        try outcomes.once(key, body)
    }

    private func start(conversationId: String, text: String, images: [String]) throws -> (String, [String]) {
        if let failure = nextFailure {
            nextFailure = nil
            throw failure
        }
        guard conversations[conversationId] != nil else { throw ChatError.notFound }
        guard !text.isEmpty else { throw ChatError.validationFailed(field: "text", reason: "must not be empty") }
        guard images.count <= 4 else { throw ChatError.validationFailed(field: "images", reason: "holds at most 4 images") }
        let now = WallTime.now().rfc3339
        messages[conversationId, default: []].append(
            ChatMessage(
                id: "m_" + UUID().uuidString.lowercased(), conversationId: conversationId, role: "user", text: text, status: "complete", images: images.isEmpty ? nil : images,
                createdAt: now))
        var words: [String] = []
        for piece in reply(text).split(separator: " ", omittingEmptySubsequences: false) {
            words.append((words.isEmpty ? "" : " ") + piece)
        }
        return ("m_" + UUID().uuidString.lowercased(), words)
    }

    private func finish(conversationId: String, messageId: String, text: String, model: String?) -> ChatMessage {
        let message = ChatMessage(
            id: messageId, conversationId: conversationId, role: "assistant", text: text, status: "complete", model: model, createdAt: WallTime.now().rfc3339)
        messages[conversationId, default: []].append(message)
        return message
    }
}
