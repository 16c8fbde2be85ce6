// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Chat`'s memories and models.
extension ChatInterface {
    public struct Models: Command {
        public static let method = "io.appd.Chat.Models"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public struct Reply: Codable, Sendable, Equatable {
            public var models: [ChatModel]
            public var usable: [String]
            public init(models: [ChatModel], usable: [String]) {
                self.models = models
                self.usable = usable
            }
        }
        public init() {}
    }
    public struct ListMemories: Command {
        public static let method = "io.appd.Chat.ListMemories"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public struct Reply: Codable, Sendable, Equatable {
            public var memories: [Memory]
            public var enabled: Bool
            public init(memories: [Memory], enabled: Bool) {
                self.memories = memories
                self.enabled = enabled
            }
        }
        public init() {}
    }
    public struct AddMemory: Command {
        public static let method = "io.appd.Chat.AddMemory"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = MemoryReply
        public var text: String
        public init(text: String) { self.text = text }
    }
    public struct UpdateMemory: Command {
        public static let method = "io.appd.Chat.UpdateMemory"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = MemoryReply
        public var id: String
        public var text: String
        public init(id: String, text: String) {
            self.id = id
            self.text = text
        }
    }
    public struct DeleteMemory: Command {
        public static let method = "io.appd.Chat.DeleteMemory"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = Empty
        public var id: String
        public init(id: String) { self.id = id }
    }
    public struct ClearMemories: Command {
        public static let method = "io.appd.Chat.ClearMemories"
        public static var requirements: [Requirement] { changes }
        public struct Reply: Codable, Sendable, Equatable {
            public var deleted: Int
            public init(deleted: Int) { self.deleted = deleted }
        }
        public init() {}
    }

    public struct MemoryReply: Codable, Sendable, Equatable {
        public var memory: Memory
        public init(memory: Memory) { self.memory = memory }
    }
}

/// A fact about the user, from their own words or added by them.
public struct Memory: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var text: String
    public var conversationId: String?
    public var messageId: String?
    public var model: String?
    public var createdAt: String
    public var updatedAt: String
    public init(id: String, text: String, conversationId: String? = nil, messageId: String? = nil, model: String? = nil, createdAt: String, updatedAt: String) {
        self.id = id
        self.text = text
        self.conversationId = conversationId
        self.messageId = messageId
        self.model = model
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A model `Send` takes, and the entitlement it needs.
public struct ChatModel: Codable, Sendable, Equatable {
    public var name: String
    public var entitlement: String?
    public var `default`: Bool
    public init(name: String, entitlement: String? = nil, default: Bool = false) {
        self.name = name
        self.entitlement = entitlement
        self.default = `default`
    }
}
