import Bus

/// `io.appd.Chat`: a signed-in, onboarded user's conversations with an assistant.
enum ChatInterface {
    static let idl = """
        # Chat. Each user sees only their own conversations; another user's is NotFound. Every method
        # needs a signed-in, onboarded account; Send also uses the free quota chat.messages unless
        # the user has its entitlement (see io.appd.Payments). Conversation ids may be shortened
        # to any unique prefix of at least 4 characters, in any case. Offline clients: changes
        # may carry an idempotency key, CreateConversation takes an id the client made, Rename and
        # Delete the version the client last saw, and Changes brings a client up to date.
        interface io.appd.Chat

        type Conversation (
          id: string,
          title: ?string,
          createdAt: string,
          updatedAt: string,
          # Goes up by one with every change (a rename, a message, a reply).
          version: int
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
          createdAt: string
        )

        # id: a UUID the client made (the conversation's id is then c_ and the UUID in
        # lowercase); creating it again with the same title returns it, with another title is a
        # Conflict carrying it.
        method CreateConversation(title: ?string, id: ?string) -> (conversation: Conversation)

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
        method Send(conversationId: string, text: string) -> (messageId: string, delta: ?string, message: ?Message)

        # Cancels a reply that is still streaming; it is stored as cancelled with its text so far.
        method Cancel(messageId: string) -> ()

        method Feedback(messageId: string, rating: (up, down)) -> ()

        error NotFound ()
        error ValidationFailed (field: string, reason: string)
        # The account holds as many conversations as it may ('limit'); delete some first.
        error QuotaExceeded (limit: int)
        # Not at the version expected, or a CreateConversation's id holds another conversation:
        # 'conversation' is as it stands.
        error Conflict (conversation: Conversation)
        # The cursor is older than the deletions kept: pull again without a cursor.
        error ResyncRequired (reason: string)

        """

    static let needs: [Requirement] = [.session, .onboarded]
    /// Changes keep their first outcome for a retry with the same idempotency key.
    static let changes: [Requirement] = [.session, .onboarded, .idempotent]

    struct CreateConversation: Command {
        static let method = "io.appd.Chat.CreateConversation"
        static var requirements: [Requirement] { changes }
        typealias Reply = ConversationReply
        var title: String?
        var id: String?
    }
    struct ListConversations: Command {
        static let method = "io.appd.Chat.ListConversations"
        static var requirements: [Requirement] { needs }
        struct Reply: Codable, Sendable {
            var conversations: [Conversation]
            var nextCursor: String?
        }
        var query: String?
        var cursor: String?
        var limit: Int?
    }
    struct RenameConversation: Command {
        static let method = "io.appd.Chat.RenameConversation"
        static var requirements: [Requirement] { changes }
        typealias Reply = ConversationReply
        var id: String
        var title: String
        var expectedVersion: Int64?
    }
    struct DeleteConversation: Command {
        static let method = "io.appd.Chat.DeleteConversation"
        static var requirements: [Requirement] { changes }
        typealias Reply = Empty
        var id: String
        var expectedVersion: Int64?
    }
    struct Changes: Command {
        static let method = "io.appd.Chat.Changes"
        static var requirements: [Requirement] { needs }
        struct Reply: Codable, Sendable {
            var changes: [ConversationChange]
            var nextCursor: Int64
            var more: Bool
        }
        var cursor: Int64?
        var limit: Int?
    }
    struct History: Command {
        static let method = "io.appd.Chat.History"
        static var requirements: [Requirement] { needs }
        struct Reply: Codable, Sendable {
            var messages: [ChatMessage]
            var nextCursor: String?
        }
        var conversationId: String
        var cursor: String?
        var limit: Int?
    }
    struct Send: StreamingCommand {
        static let method = "io.appd.Chat.Send"
        static var requirements: [Requirement] { needs + [.meter("chat.messages")] }
        typealias Reply = SendReply
        var conversationId: String
        var text: String
    }
    struct Cancel: Command {
        static let method = "io.appd.Chat.Cancel"
        static var requirements: [Requirement] { changes }
        typealias Reply = Empty
        var messageId: String
    }
    struct Feedback: Command {
        static let method = "io.appd.Chat.Feedback"
        static var requirements: [Requirement] { changes }
        typealias Reply = Empty
        var messageId: String
        var rating: String
    }

    struct ConversationReply: Codable, Sendable { var conversation: Conversation }
}

public struct SendReply: Codable, Sendable, Equatable {
    public var messageId: String
    public var delta: String?
    public var message: ChatMessage?
}

public struct Conversation: Codable, Sendable, Equatable {
    public var id: String
    public var title: String?
    public var createdAt: String
    public var updatedAt: String
    public var version: Int64
}

/// One change in a pull (`Chat.Changes`): the conversation as it stands, or a deleted one's id.
public struct ConversationChange: Codable, Sendable, Equatable {
    public var seq: Int64
    public var id: String
    public var deleted: Bool
    public var conversation: Conversation?
}

public struct Usage: Codable, Sendable, Equatable {
    public var promptTokens: Int
    public var completionTokens: Int
}

public struct ChatMessage: Codable, Sendable, Equatable {
    public var id: String
    public var conversationId: String
    public var role: String
    public var text: String
    public var status: String
    public var error: String?
    public var usage: Usage?
    public var feedback: String?
    public var createdAt: String
}
