// SPDX-License-Identifier: Apache-2.0
import Contracts
import Foundation

/// The conversation list on the device: `OfflineConversations(service: appd.chat, store: FileOfflineConversationsStore(path: …))`.
/// A conversation's messages are not kept here (a reply needs appd; `History` pages them).
public typealias OfflineConversations = OfflineRepository<ConversationsKind>
public typealias FileOfflineConversationsStore = FileOfflineStore<ConversationsKind>
public typealias InMemoryOfflineConversationsStore = InMemoryOfflineStore<ConversationsKind>
public typealias ConversationConflict = OfflineConflict<ConversationsKind>

/// Conversations, kept offline over `ChatServing`.
public enum ConversationsKind: OfflineKind {
    public enum Change: Codable, Sendable, Hashable {
        case create(title: String?)
        case rename(title: String)
        case delete
    }

    public static func version(of item: Conversation) -> Int64 { item.version }
    /// Most recently changed first, as a chat list shows them.
    public static func precedes(_ a: Conversation, _ b: Conversation) -> Bool { (a.updatedAt, a.id) > (b.updatedAt, b.id) }
    public static var deletion: Change { .delete }

    public static func applied(_ change: Change, to conversation: Conversation?, id: String, madeAt: String) -> Conversation? {
        switch change {
        case .create(let title):
            return conversation ?? Conversation(id: id, title: title, createdAt: madeAt, updatedAt: madeAt, version: 0)
        case .rename(let title):
            guard var conversation else { return nil }
            conversation.title = title
            conversation.updatedAt = madeAt
            return conversation
        case .delete:
            return nil
        }
    }

    public static func send(_ change: Change, id: String, expectedVersion: Int64?, key: String, to service: any ChatServing) async throws -> Conversation? {
        switch change {
        case .create(let title):
            return try await service.createConversation(title: title, id: id, temporary: false, idempotencyKey: key)
        case .rename(let title):
            return try await service.rename(conversationId: id, title: title, expectedVersion: expectedVersion, idempotencyKey: key)
        case .delete:
            try await service.delete(conversationId: id, expectedVersion: expectedVersion, idempotencyKey: key)
            return nil
        }
    }

    public static func changes(after cursor: Int64?, from service: any ChatServing) async throws -> OfflineFeedPage<Conversation> {
        let page = try await service.conversationChanges(after: cursor, limit: 200)
        return OfflineFeedPage(
            changes: page.changes.map { OfflineFeedChange(seq: $0.seq, id: $0.id, deleted: $0.deleted, item: $0.conversation) },
            nextCursor: page.nextCursor, more: page.more)
    }

    public static func signals(after cursor: Int64, from service: any ChatServing) -> AsyncThrowingStream<Int64, any Error> {
        service.conversationSignals(after: cursor)
    }

    public static func changes(from server: Conversation, to wanted: Conversation?) -> [Change] {
        guard let wanted else { return [.delete] }
        return wanted.title != server.title ? [.rename(title: wanted.title ?? "")] : []
    }

    public static func conflictingItem(in error: any Error) -> Conversation? {
        if case ChatError.conflict(let conversation) = error { return conversation }
        return nil
    }

    public static func isNotFound(_ error: any Error) -> Bool { (error as? ChatError) == .notFound }

    public static func isResyncRequired(_ error: any Error) -> Bool {
        if case ChatError.resyncRequired = error { return true }
        return false
    }
}

extension OfflineRepository where Kind == ConversationsKind {
    /// The conversations as the app sees them, most recently changed first.
    public func conversations() async throws -> [Conversation] { try await items() }

    /// Starts a conversation with an id made here (`Conversation.newID()`), appd's id too.
    @discardableResult
    public func create(title: String? = nil) async throws -> Conversation {
        try await create(Conversation.newID(), .create(title: title))!
    }

    @discardableResult
    public func rename(id: String, title: String) async throws -> Conversation {
        try await change(id, .rename(title: title))!
    }
}

extension OfflineSnapshot where Kind == ConversationsKind {
    public var conversations: [Conversation] { items }
}
