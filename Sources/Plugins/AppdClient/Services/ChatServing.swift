// SPDX-License-Identifier: Apache-2.0
import Contracts

/// What a chat screen needs from a server: `AppdClient.chat`, or `InMemoryChat` (the
/// `AppdClientTesting` product) in a view model's tests.
public protocol ChatServing: Sendable {
    /// A conversation; with `id` (`Conversation.newID()`) creating it again with the same
    /// title returns it.
    func createConversation(title: String?, id: String?, temporary: Bool, idempotencyKey: String?) async throws -> Conversation
    func conversations(query: String?, cursor: String?, limit: Int?) async throws -> ChatInterface.ListConversations.Reply
    func rename(conversationId: String, title: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Conversation
    func delete(conversationId: String, expectedVersion: Int64?, idempotencyKey: String?) async throws
    /// What changed in the user's conversations after `cursor` (nil: all), tombstones included.
    func conversationChanges(after cursor: Int64?, limit: Int?) async throws -> ChatInterface.Changes.Reply
    /// The log position of each change to the user's conversations after `cursor`, then live.
    func conversationSignals(after cursor: Int64) -> AsyncThrowingStream<Int64, any Error>
    func history(conversationId: String, cursor: String?, limit: Int?) async throws -> ChatInterface.History.Reply
    /// Sends a message and streams the reply: the reply's id first, then each piece of text,
    /// then the stored message. Stopping the iteration cancels the reply. `images`: up to four
    /// uploaded images (`AppdClient.upload`) the model sees with the text; they then go with
    /// the conversation.
    func send(conversationId: String, text: String, model: String?, images: [String]) -> AsyncThrowingStream<SendReply, any Error>
    func cancel(messageId: String) async throws
}

extension ChatServing {
    public func createConversation(title: String? = nil) async throws -> Conversation {
        try await createConversation(title: title, id: nil, temporary: false, idempotencyKey: nil)
    }
    public func rename(conversationId: String, title: String, expectedVersion: Int64? = nil) async throws -> Conversation {
        try await rename(conversationId: conversationId, title: title, expectedVersion: expectedVersion, idempotencyKey: nil)
    }
    public func delete(conversationId: String, expectedVersion: Int64? = nil) async throws {
        try await delete(conversationId: conversationId, expectedVersion: expectedVersion, idempotencyKey: nil)
    }
    public func conversations() async throws -> ChatInterface.ListConversations.Reply {
        try await conversations(query: nil, cursor: nil, limit: nil)
    }
    public func history(conversationId: String) async throws -> ChatInterface.History.Reply {
        try await history(conversationId: conversationId, cursor: nil, limit: nil)
    }
    public func send(conversationId: String, text: String, images: [String] = []) -> AsyncThrowingStream<SendReply, any Error> {
        send(conversationId: conversationId, text: text, model: nil, images: images)
    }
    public func send(conversationId: String, text: String, model: String?) -> AsyncThrowingStream<SendReply, any Error> {
        send(conversationId: conversationId, text: text, model: model, images: [])
    }
}
