// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Chat`: a signed-in, onboarded user's conversations with an assistant.
public enum ChatInterface {
    public static let idl = """
        # Chat. Each user sees only their own conversations; another user's is NotFound. Every method
        # needs a signed-in, onboarded account; Send also uses the free quota chat.messages unless
        # the user has its entitlement (see io.appd.Payments). Conversation ids may be shortened
        # to any unique prefix of at least 4 characters, in any case. Offline clients: changes
        # may carry an idempotency key, CreateConversation takes an id the client made, Rename and
        # Delete the version the client last saw, and Changes brings a client up to date.
        # Memory: after each completed reply, facts the user stated in their own message (never
        # the assistant's words) are kept as memories and given to the model in later
        # conversations; the user sees, edits and deletes them, and turns memory off with the
        # setting chat.memory (io.appd.Settings). A temporary conversation neither reads nor
        # writes memories. Deleting a conversation keeps its memories; deleting the account
        # erases them.
        interface io.appd.Chat

        type Conversation (
          id: string,
          title: ?string,
          createdAt: string,
          updatedAt: string,
          # Goes up by one with every change (a rename, a message, a reply).
          version: int,
          # Neither reads nor writes memories.
          temporary: bool
        )

        # One change in a pull: the conversation as it stands, or for a deletion only its id.
        type ConversationChange (
          seq: int,
          id: string,
          deleted: bool,
          conversation: ?Conversation
        )

        type Usage (
          promptTokens: int,
          completionTokens: int
        )

        type Message (
          id: string,
          conversationId: string,
          role: (user, assistant),
          text: string,
          # An assistant message that was cancelled or failed keeps the text streamed until then.
          status: (complete, cancelled, failed),
          error: ?string,
          usage: ?Usage,
          # up or down, once given.
          feedback: ?string,
          # The model that wrote an assistant message.
          model: ?string,
          # A user message's images: files of io.appd.Files (GET /files/<id>), which go with
          # the conversation.
          images: ?[]string,
          createdAt: string
        )

        # A fact about the user, from their own words (or added by them).
        type Memory (
          id: string,
          text: string,
          # Where it was learnt; none for one the user added.
          conversationId: ?string,
          messageId: ?string,
          # The model that extracted it.
          model: ?string,
          createdAt: string,
          updatedAt: string
        )

        # A model a user may ask for; entitlement: the one it needs, if any.
        type Model (
          name: string,
          entitlement: ?string,
          default: bool
        )

        # id: a UUID the client made (the conversation's id is then c_ and the UUID in
        # lowercase); creating it again with the same title returns it, with another title is a
        # Conflict carrying it.
        # temporary: the conversation neither reads nor writes memories.
        method CreateConversation(title: ?string, id: ?string, temporary: ?bool) -> (conversation: Conversation)

        # Newest first. query matches titles (case-insensitive). Pass nextCursor back as cursor.
        method ListConversations(query: ?string, cursor: ?string, limit: ?int) -> (conversations: []Conversation, nextCursor: ?string)

        # With expectedVersion, a conversation changed since is a Conflict.
        method RenameConversation(id: string, title: string, expectedVersion: ?int) -> (conversation: Conversation)

        # Deletes the conversation and its messages.
        method DeleteConversation(id: string, expectedVersion: ?int) -> ()

        # What changed after 'cursor', as Todos.Changes: each changed conversation as it stands,
        # each deleted one as a tombstone; without a cursor every conversation. Pull until
        # 'more' is false, then io.appd.Bus.Subscribe from nextCursor. limit: 1 to 500.
        method Changes(cursor: ?int, limit: ?int) -> (changes: []ConversationChange, nextCursor: int, more: bool)

        # The latest messages, oldest first within the page. nextCursor pages back to older ones.
        method History(conversationId: string, cursor: ?string, limit: ?int) -> (messages: []Message, nextCursor: ?string)

        # Sends a message and streams the reply. Call with more: every reply carries the assistant
        # message's id (for Cancel from another connection) and the next piece of text in delta;
        # the last carries the stored message. Closing the connection cancels the reply.
        # model: one of Models (else the setting chat.model, else the default); a model not on
        # the list is ModelNotAllowed, one needing an entitlement the user lacks PaymentRequired.
        # temperature: 0 to 2.
        # images: up to 4 images the user uploaded (POST /files), passed to the model with the
        # text; they then go with the conversation (deleted with it). One that is not the
        # user's, not an image or already used elsewhere is ValidationFailed (images).
        method Send(conversationId: string, text: string, model: ?string, temperature: ?float, images: ?[]string) -> (messageId: string, delta: ?string, message: ?Message)

        # Cancels a reply that is still streaming; it is stored as cancelled with its text so far.
        method Cancel(messageId: string) -> ()

        method Feedback(messageId: string, rating: (up, down)) -> ()

        # The models Send takes, and which of them this user may use now.
        method Models() -> (models: []Model, usable: []string)

        # Every memory, newest first; enabled: the setting chat.memory.
        method ListMemories() -> (memories: []Memory, enabled: bool)

        method AddMemory(text: string) -> (memory: Memory)

        method UpdateMemory(id: string, text: string) -> (memory: Memory)

        method DeleteMemory(id: string) -> ()

        # Deletes every memory; deleted: how many there were.
        method ClearMemories() -> (deleted: int)

        # category: notFound
        error NotFound ()
        # category: invalid
        error ValidationFailed (field: string, reason: string)
        # The account holds as many conversations as it may ('limit'); delete some first.
        # category: forbidden
        error QuotaExceeded (limit: int)
        # Not at the version expected, or a CreateConversation's id holds another conversation:
        # 'conversation' is as it stands.
        # category: conflict
        error Conflict (conversation: Conversation)
        # The cursor is older than the deletions kept: pull again without a cursor.
        # category: gone
        error ResyncRequired (reason: string)
        # Send's model is not one the operator allows: 'allowed' are.
        # category: invalid
        error ModelNotAllowed (model: string, allowed: []string)
        # The account holds as many memories as it may ('limit'); delete some first.
        # category: forbidden
        error MemoryFull (limit: int)

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [
        CreateConversation.self, ListConversations.self, RenameConversation.self, DeleteConversation.self, Changes.self, History.self, Cancel.self,
        Feedback.self, Models.self, ListMemories.self, AddMemory.self, UpdateMemory.self, DeleteMemory.self, ClearMemories.self,
    ]
    public static let streams: [any StreamingCommand.Type] = [Send.self]
    public typealias Errors = ChatError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }

    public static let needs: [Requirement] = [.session, .onboarded]
    /// Changes keep their first outcome for a retry with the same idempotency key.
    public static let changes: [Requirement] = [.session, .onboarded, .idempotent]

    public struct CreateConversation: Command {
        public static let method = "io.appd.Chat.CreateConversation"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = ConversationReply
        public var title: String?
        public var id: String?
        public var temporary: Bool?
        public init(title: String? = nil, id: String? = nil, temporary: Bool? = nil) {
            self.title = title
            self.id = id
            self.temporary = temporary
        }
    }
    public struct ListConversations: Command {
        public static let method = "io.appd.Chat.ListConversations"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public struct Reply: Codable, Sendable {
            public var conversations: [Conversation]
            public var nextCursor: String?
            public init(conversations: [Conversation], nextCursor: String? = nil) {
                self.conversations = conversations
                self.nextCursor = nextCursor
            }
        }
        public var query: String?
        public var cursor: String?
        public var limit: Int?
        public init(query: String? = nil, cursor: String? = nil, limit: Int? = nil) {
            self.query = query
            self.cursor = cursor
            self.limit = limit
        }
    }
    public struct RenameConversation: Command {
        public static let method = "io.appd.Chat.RenameConversation"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = ConversationReply
        public var id: String
        public var title: String
        public var expectedVersion: Int64?
        public init(id: String, title: String, expectedVersion: Int64? = nil) {
            self.id = id
            self.title = title
            self.expectedVersion = expectedVersion
        }
    }
    public struct DeleteConversation: Command {
        public static let method = "io.appd.Chat.DeleteConversation"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = Empty
        public var id: String
        public var expectedVersion: Int64?
        public init(id: String, expectedVersion: Int64? = nil) {
            self.id = id
            self.expectedVersion = expectedVersion
        }
    }
    public struct Changes: Command {
        public static let method = "io.appd.Chat.Changes"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public struct Reply: Codable, Sendable {
            public var changes: [ConversationChange]
            public var nextCursor: Int64
            public var more: Bool
            public init(changes: [ConversationChange], nextCursor: Int64, more: Bool) {
                self.changes = changes
                self.nextCursor = nextCursor
                self.more = more
            }
        }
        public var cursor: Int64?
        public var limit: Int?
        public init(cursor: Int64? = nil, limit: Int? = nil) {
            self.cursor = cursor
            self.limit = limit
        }
    }
    public struct History: Command {
        public static let method = "io.appd.Chat.History"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public struct Reply: Codable, Sendable {
            public var messages: [ChatMessage]
            public var nextCursor: String?
            public init(messages: [ChatMessage], nextCursor: String? = nil) {
                self.messages = messages
                self.nextCursor = nextCursor
            }
        }
        public var conversationId: String
        public var cursor: String?
        public var limit: Int?
        public init(conversationId: String, cursor: String? = nil, limit: Int? = nil) {
            self.conversationId = conversationId
            self.cursor = cursor
            self.limit = limit
        }
    }
    public struct Send: StreamingCommand {
        public static let method = "io.appd.Chat.Send"
        public static var requirements: [Requirement] { needs + [.meter("chat.messages")] }
        public typealias Reply = SendReply
        public var conversationId: String
        public var text: String
        public var model: String?
        public var temperature: Double?
        public var images: [String]?
        public init(conversationId: String, text: String, model: String? = nil, temperature: Double? = nil, images: [String]? = nil) {
            self.conversationId = conversationId
            self.text = text
            self.model = model
            self.temperature = temperature
            self.images = images
        }
    }
    public struct Cancel: Command {
        public static let method = "io.appd.Chat.Cancel"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = Empty
        public var messageId: String
        public init(messageId: String) {
            self.messageId = messageId
        }
    }
    public struct Feedback: Command {
        public static let method = "io.appd.Chat.Feedback"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = Empty
        public var messageId: String
        public var rating: String
        public init(messageId: String, rating: String) {
            self.messageId = messageId
            self.rating = rating
        }
    }

    public struct ConversationReply: Codable, Sendable {
        public var conversation: Conversation
        public init(conversation: Conversation) {
            self.conversation = conversation
        }
    }
}

public struct Conversation: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var title: String?
    public var createdAt: String
    public var updatedAt: String
    public var version: Int64
    public var temporary: Bool
    public init(id: String, title: String? = nil, createdAt: String, updatedAt: String, version: Int64, temporary: Bool = false) {
        self.id = id
        self.title = title
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.temporary = temporary
    }
}

/// One change in a pull (`Chat.Changes`): the conversation as it stands, or a deleted one's id.
public struct ConversationChange: Codable, Sendable, Hashable, Identifiable {
    public var seq: Int64
    public var id: String
    public var deleted: Bool
    public var conversation: Conversation?
    public init(seq: Int64, id: String, deleted: Bool, conversation: Conversation? = nil) {
        self.seq = seq
        self.id = id
        self.deleted = deleted
        self.conversation = conversation
    }
}

public struct Usage: Codable, Sendable, Hashable {
    public var promptTokens: Int
    public var completionTokens: Int
    public init(promptTokens: Int, completionTokens: Int) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
    }
}

public struct ChatMessage: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var conversationId: String
    public var role: String
    public var text: String
    public var status: String
    public var error: String?
    public var usage: Usage?
    public var feedback: String?
    public var model: String?
    /// A user message's images (files of `io.appd.Files`).
    public var images: [String]?
    public var createdAt: String
    public init(
        id: String, conversationId: String, role: String, text: String, status: String, error: String? = nil, usage: Usage? = nil, feedback: String? = nil,
        model: String? = nil, images: [String]? = nil, createdAt: String
    ) {
        self.id = id
        self.conversationId = conversationId
        self.role = role
        self.text = text
        self.status = status
        self.error = error
        self.usage = usage
        self.feedback = feedback
        self.model = model
        self.images = images
        self.createdAt = createdAt
    }
}
