import Bus
import Contracts
import PluginKit
import Storage
import EventDelivery

/// Conversations with an assistant (`io.appd.Chat`): streamed replies with cancel, the LLM
/// provider seam, and erasure of a deleted account's conversations.
public struct ChatPlugin: Plugin {
    public struct Options: Sendable {
        /// Which provider answers: the embedded echo provider, or an OpenAI-compatible endpoint.
        public var provider: ProviderChoice = .echo(delay: .milliseconds(20))
        /// Sent first, before the conversation.
        public var systemPrompt: String? = "You are a helpful assistant."
        /// How much recent history (characters) goes with each request.
        public var contextCharacters = 12_000
        public var maxMessageCharacters = 32_000
        /// Conversations one account may hold (storage per account is bounded; messages are
        /// bounded by the Send meter and this).
        public var maxConversationsPerUser = 1_000
        /// The free quota Send uses (nil: Send is not metered).
        public var meter: String? = "chat.messages"
        /// How long deleted conversations' tombstones stay in the change feed.
        public var tombstoneRetention: Duration = .seconds(90 * 86_400)
        public init() {}
    }

    public enum ProviderChoice: Sendable {
        case echo(delay: Duration)
        case openAI(OpenAIProvider.Options)
    }

    public let manifest = PluginManifest(
        name: "chat", version: "0.1.0", dependencies: ["auth"], interface: ChatInterface.idl,
        events: ChatEvents.all, consumes: [AccountDeleted.self],
        configKeys: ["chatProvider", "chatBaseURL", "chatModel", "chatApiKey", "chatSystemPrompt", "chatContextCharacters", "chatMeter"])
    public var migrations: [Migration] { ChatMigrations.all }

    let options: Options
    let provider: any LLMProvider
    let running = RunningReplies()
    let clock: @Sendable () -> WallTime

    /// Fails when the provider's settings are unusable (a bad URL).
    public init(options: Options = Options(), provider: (any LLMProvider)? = nil, clock: @escaping @Sendable () -> WallTime = { .now() }) throws(ProviderError) {
        self.options = options
        self.clock = clock
        if let provider {
            self.provider = provider
        } else {
            switch options.provider {
            case .echo(let delay): self.provider = EchoProvider(delay: delay)
            case .openAI(let settings): self.provider = try OpenAIProvider(options: settings)
            }
        }
    }

    func service(_ database: any Database) -> ChatService {
        ChatService(repository: ChatRepository(database: database), provider: provider, options: options, running: running, clock: clock)
    }

    public func start(_ context: PluginContext) async throws {
        let service = service(context.database)
        let repository = service.repository
        let handlers = context.handlers
        handlers.handle(ChatInterface.CreateConversation.self) { c, e in
            .init(conversation: try await service.createConversation(owner: try owner(e), title: c.title, id: c.id, causedBy: e))
        }
        handlers.handle(ChatInterface.ListConversations.self) { c, e in
            try await service.listConversations(owner: try owner(e), query: c.query, cursor: c.cursor, limit: c.limit)
        }
        handlers.handle(ChatInterface.RenameConversation.self) { c, e in
            let user = try owner(e)
            let id = try await repository.resolveConversation(owner: user, id: c.id, field: "id")
            let title = try ChatService.title(c.title, required: true) ?? ""
            return .init(conversation: try await repository.rename(owner: user, id: id, title: title, expected: c.expectedVersion, now: service.now, causedBy: e))
        }
        handlers.handle(ChatInterface.DeleteConversation.self) { c, e in
            let user = try owner(e)
            let id = try await repository.resolveConversation(owner: user, id: c.id, field: "id")
            try await repository.deleteConversation(owner: user, id: id, expected: c.expectedVersion, now: service.now, causedBy: e)
            return Empty()
        }
        handlers.handle(ChatInterface.Changes.self) { c, e in try await service.changes(owner: try owner(e), cursor: c.cursor, limit: c.limit) }
        handlers.handle(ChatInterface.History.self) { c, e in
            let user = try owner(e)
            let id = try await repository.resolveConversation(owner: user, id: c.conversationId, field: "conversationId")
            return try await service.history(owner: user, conversation: id, cursor: c.cursor, limit: c.limit)
        }
        let sendNeeds = ChatInterface.needs + (options.meter.map { [Requirement.meter($0)] } ?? [])
        handlers.handle(ChatInterface.Send.self, requirements: sendNeeds) { c, e, writer in
            let user = try owner(e)
            let id = try await repository.resolveConversation(owner: user, id: c.conversationId, field: "conversationId")
            return try await service.send(owner: user, conversation: id, text: c.text, writer: writer, causedBy: e)
        }
        let running = self.running
        handlers.handle(ChatInterface.Cancel.self) { c, e in
            guard running.cancel(c.messageId, owner: try owner(e)) else { throw ChatError.notFound }
            return Empty()
        }
        handlers.handle(ChatInterface.Feedback.self) { c, e in
            guard c.rating == "up" || c.rating == "down" else { throw ChatError.validation("rating", "is up or down") }
            try await repository.feedback(owner: try owner(e), message: c.messageId, rating: c.rating, causedBy: e)
            return Empty()
        }
        context.logger.info("chat provider ready", metadata: ["provider": provider.name])
    }

    public func services(_ context: PluginContext) -> [any Service] {
        let repository = ChatRepository(database: context.database)
        let tombstones = ChatRepository.feed.retention(context.database, keep: options.tombstoneRetention, logger: context.logger)
        do {
            return [
                try DurableConsumer(name: "chat.accountDeleted", consuming: AccountDeleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    deleted, _ in try await repository.eraseUser(deleted.userId)
                },
                tombstones,
            ]
        } catch {
            return [FailedService(name: "chat.accountDeleted", error: error), tombstones]
        }
    }

}

/// The signed-in user the gates established.
private func owner(_ envelope: Envelope) throws(ChatError) -> String { try envelope.signedInUser(or: ChatError.notFound) }
