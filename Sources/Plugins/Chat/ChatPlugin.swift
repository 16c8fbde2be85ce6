// SPDX-License-Identifier: Apache-2.0
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
        /// The models Send takes (`chatModels`) and the default (`chatModel`).
        public var models = ChatModels([], default: "gpt-4o-mini")
        /// Characters of memories given with each request (the most recently changed first).
        public var memoryCharacters = 2_000
        public var maxMemoriesPerUser = 200
        public var maxMemoryCharacters = 500
        /// The longest a memory extraction may take before that message is skipped.
        public var memoryExtractionTimeout: Duration = .seconds(60)
        /// The bytes of text one account may keep: its todos, chats and memories together
        /// (`accountStorageMB`; 0: no limit).
        public var storageLimit: Int64 = 100 << 20
        /// appd's public address (`https://api.example.com`): images reach the model as signed
        /// URLs under it. Nil: as `data:` URLs of their bytes (`ChatImages`).
        public var imageBaseURL: String?
        public init() {}
    }

    public enum ProviderChoice: Sendable {
        case echo(delay: Duration)
        case openAI(OpenAIProvider.Options)
    }

    public let manifest: PluginManifest
    public var migrations: [Migration] { ChatMigrations.all }

    let options: Options
    let provider: any LLMProvider
    let running = RunningReplies()
    let clock: @Sendable () -> WallTime

    /// Fails when the provider's settings are unusable (a bad URL).
    public init(options: Options = Options(), provider: (any LLMProvider)? = nil, clock: @escaping @Sendable () -> WallTime = { .now() }) throws(ProviderError) {
        self.options = options
        self.clock = clock
        manifest = PluginManifest(
            name: "chat", version: "0.1.0", dependencies: ["auth"], interface: ChatInterface.idl,
            events: ChatEvents.all, consumes: [AccountDeleted.self, ChatReplyCompleted.self],
            configKeys: ["chatProvider", "chatBaseURL", "chatModel", "chatModels", "chatApiKey", "chatSystemPrompt", "chatContextCharacters", "chatMeter", "chatImageBaseURL"],
            settings: Self.settings(options.models))
        if let provider {
            self.provider = provider
        } else {
            switch options.provider {
            case .echo(let delay): self.provider = EchoProvider(delay: delay)
            case .openAI(let settings): self.provider = try OpenAIProvider(options: settings)
            }
        }
    }

    /// The settings chat reads: memory on or off, the preferred model, and the style an app
    /// shows a conversation in (per conversation, or for all).
    static func settings(_ models: ChatModels) -> [SettingDeclaration] {
        [
            SettingDeclaration(
                key: ChatService.memoryKey, type: .bool, default: true, plugin: "chat",
                description: "Whether chat remembers facts you state and uses them in later conversations."),
            SettingDeclaration(
                key: ChatService.modelKey, type: .enum, values: models.names, default: SettingValue(string: models.defaultModel.name), plugin: "chat",
                description: "The model replies come from when a message names none (one you may use; else the default)."),
            SettingDeclaration(
                key: "chat.style", type: .enum, values: ["bubble", "prompt"], default: "bubble", scoped: true, plugin: "chat",
                description: "How the app shows a conversation: chat bubbles or prompt and answer; per conversation (scope: its id) or for all."),
        ]
    }

    func service(_ context: PluginContext) -> ChatService {
        ChatService(
            repository: ChatRepository(database: context.database, storageLimit: options.storageLimit), provider: provider, options: options, running: running, clock: clock,
            lookups: .bus(context.bus, images: ChatImages(baseURL: options.imageBaseURL)), logger: context.logger)
    }

    public func start(_ context: PluginContext) async throws {
        let service = service(context)
        let repository = service.repository
        let handlers = context.handlers
        handlers.handle(ChatInterface.CreateConversation.self) { c, e in
            .init(conversation: try await service.createConversation(owner: try owner(e), title: c.title, id: c.id, temporary: c.temporary ?? false, causedBy: e))
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
            await service.releaseImages(owner: user, conversation: id)
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
            try await service.send(
                owner: try owner(e), conversation: c.conversationId, text: c.text, images: c.images, model: c.model, temperature: c.temperature, writer: writer,
                causedBy: e)
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
        registerMemories(service, on: handlers)
        context.logger.info("chat provider ready", metadata: ["provider": provider.name])
    }

    public func services(_ context: PluginContext) -> [any Service] {
        let service = service(context)
        let repository = service.repository
        var services: [any Service] = []
        do {
            services.append(
                try DurableConsumer(name: "chat.accountDeleted", consuming: AccountDeleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    deleted, _ in try await repository.eraseUser(deleted.userId)
                })
        } catch {
            services.append(FailedService(name: "chat.accountDeleted", error: error))
        }
        services.append(ChatRepository.feed.retention(context.database, keep: options.tombstoneRetention, logger: context.logger))
        do {
            // Memories are learnt after the reply, off the caller's path, from the log: a
            // restart resumes where it stopped and nothing is learnt twice.
            services.append(
                try DurableConsumer(name: "chat.memories", consuming: ChatReplyCompleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    completed, event in
                    guard completed.status == "complete" else { return }
                    try await service.extractMemories(after: completed.messageId, causedBy: event)
                })
        } catch {
            services.append(FailedService(name: "chat.memories", error: error))
        }
        return services
    }

}

/// The signed-in user the gates established.
func owner(_ envelope: Envelope) throws(ChatError) -> String { try envelope.signedInUser(or: ChatError.notFound) }
