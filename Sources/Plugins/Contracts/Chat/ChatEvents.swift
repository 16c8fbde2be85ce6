// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The events the chat plugin publishes; each is about the conversation's owner.
public enum ChatEvents {
    public static let all: [any Event.Type] = [
        ChatMessageSent.self, ChatReplyCompleted.self, ChatReplyFailed.self, ChatFeedbackGiven.self, ChatConversationCreated.self,
        ChatConversationRenamed.self, ChatConversationDeleted.self, ChatMemoriesChanged.self,
    ]
}

/// A conversation was created (its place in the change feed, `Chat.Changes`).
public struct ChatConversationCreated: OwnedEvent, Equatable {
    public static let topic = "chat.conversationCreated"
    public var userId: String
    public var conversationId: String
    public init(userId: String, conversationId: String) {
        self.userId = userId
        self.conversationId = conversationId
    }
}

/// A conversation was given a new title.
public struct ChatConversationRenamed: OwnedEvent, Equatable {
    public static let topic = "chat.conversationRenamed"
    public var userId: String
    public var conversationId: String
    public init(userId: String, conversationId: String) {
        self.userId = userId
        self.conversationId = conversationId
    }
}

/// A conversation and its messages were deleted.
public struct ChatConversationDeleted: OwnedEvent, Equatable {
    public static let topic = "chat.conversationDeleted"
    public var userId: String
    public var conversationId: String
    public init(userId: String, conversationId: String) {
        self.userId = userId
        self.conversationId = conversationId
    }
}

/// The user's message was committed (before the provider is asked).
public struct ChatMessageSent: OwnedEvent, Equatable {
    public static let topic = "chat.messageSent"
    public var userId: String
    public var conversationId: String
    public var messageId: String
    public var text: String
    public init(userId: String, conversationId: String, messageId: String, text: String) {
        self.userId = userId
        self.conversationId = conversationId
        self.messageId = messageId
        self.text = text
    }
}

/// Tokens the provider counted for one reply.
public struct ChatTokenUsage: Codable, Sendable, Equatable {
    public var promptTokens: Int
    public var completionTokens: Int
    public init(promptTokens: Int, completionTokens: Int) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
    }
}

/// The assistant's reply was committed: complete, or cancelled with what it had so far.
public struct ChatReplyCompleted: OwnedEvent, Equatable {
    public static let topic = "chat.replyCompleted"
    public var userId: String
    public var conversationId: String
    public var messageId: String
    /// complete or cancelled.
    public var status: String
    public var usage: ChatTokenUsage?
    public init(userId: String, conversationId: String, messageId: String, status: String, usage: ChatTokenUsage?) {
        self.userId = userId
        self.conversationId = conversationId
        self.messageId = messageId
        self.status = status
        self.usage = usage
    }
}

/// The provider failed; the reply was committed with what it had and the reason.
public struct ChatReplyFailed: OwnedEvent, Equatable {
    public static let topic = "chat.replyFailed"
    public var userId: String
    public var conversationId: String
    public var messageId: String
    public var status: String
    public var reason: String?
    public var usage: ChatTokenUsage?
    public init(userId: String, conversationId: String, messageId: String, reason: String?, usage: ChatTokenUsage?) {
        self.userId = userId
        self.conversationId = conversationId
        self.messageId = messageId
        self.status = "failed"
        self.reason = reason
        self.usage = usage
    }
}

/// The user rated an assistant reply up or down.
public struct ChatFeedbackGiven: OwnedEvent, Equatable {
    public static let topic = "chat.feedbackGiven"
    public var userId: String
    public var conversationId: String
    public var messageId: String
    /// up or down.
    public var rating: String
    public init(userId: String, conversationId: String, messageId: String, rating: String) {
        self.userId = userId
        self.conversationId = conversationId
        self.messageId = messageId
        self.rating = rating
    }
}

/// The user's memories changed: `change` is added, updated, deleted or cleared; `memoryIds` the
/// memories it touched (the text stays out of the log: read it with ListMemories).
public struct ChatMemoriesChanged: OwnedEvent, Equatable {
    public static let topic = "chat.memoriesChanged"
    public var userId: String
    public var change: String
    public var memoryIds: [String]
    public init(userId: String, change: String, memoryIds: [String]) {
        self.userId = userId
        self.change = change
        self.memoryIds = memoryIds
    }
}
