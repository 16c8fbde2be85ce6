// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import PluginKit

/// The chat rules: validation, paging, and Send — commit the user's message, stream the
/// provider's reply, commit the assistant's message with how it ended.
struct ChatService: Sendable {
    static let defaultPageSize = 50
    static let maxPageSize = 200
    static let maxTitle = 200

    let repository: ChatRepository
    let provider: any LLMProvider
    let options: ChatPlugin.Options
    let running: RunningReplies
    let clock: @Sendable () -> WallTime
    let lookups: ChatLookups
    let logger: Logger

    var now: Int64 { clock().nanosecondsSinceEpoch }

    /// A conversation's id: random, so any 4 characters after the `c_` tell it apart by hand.
    static func newID(_ prefix: String) throws -> String { prefix + (try SecretToken.generate().prefix(20)) }

    /// A message's or a memory's id (never typed by hand; many made): time first, so new rows go
    /// to the end of the id's index (`RecordID`).
    static func newRecordID(_ prefix: String) throws -> String { try RecordID.generate(prefix: prefix) }

    static func title(_ raw: String?, required: Bool) throws(ChatError) -> String? {
        guard let raw else {
            if required { throw .validation("title", "is required") }
            return nil
        }
        let title = raw.trimmingWhitespace()
        if title.isEmpty {
            if required { throw .validation("title", "is required") }
            return nil
        }
        if let problem = TextLimit(characters: maxTitle).violation(of: title) { throw .validation("title", problem) }
        return title
    }

    static func page(_ cursor: String?, _ limit: Int?) throws(ChatError) -> (before: Int64, size: Int) {
        let size = min(max(limit ?? defaultPageSize, 1), maxPageSize)
        guard let cursor, !cursor.isEmpty else { return (.max, size) }
        guard let value = Int64(cursor), value > 0 else { throw .validation("cursor", "is not a cursor from a previous page") }
        return (value, size)
    }

    /// With a client's id (a UUID), creating again with the same title returns the conversation.
    func createConversation(owner: String, title: String?, id: String?, temporary: Bool, causedBy cause: (any Cause)?) async throws -> Conversation {
        let chosen = try id.map { text throws(ChatError) in
            guard let id = ClientID.canonical(text, prefix: "c_") else { throw .validation("id", ClientID.expected) }
            return id
        }
        return try await repository.createConversation(
            owner: owner, id: try chosen ?? Self.newID("c_"), clientChosen: chosen != nil, title: try Self.title(title, required: false), temporary: temporary, now: now,
            limit: options.maxConversationsPerUser, causedBy: cause)
    }

    static let defaultChangesPage = 100

    func changes(owner: String, cursor: Int64?, limit: Int?) async throws -> ChatInterface.Changes.Reply {
        try await repository.changes(owner: owner, after: cursor, limit: min(max(limit ?? Self.defaultChangesPage, 1), 500))
    }

    func listConversations(owner: String, query: String?, cursor: String?, limit: Int?) async throws -> ChatInterface.ListConversations.Reply {
        let (before, size) = try Self.page(cursor, limit)
        if let query, let problem = TextLimit(characters: 200).violation(of: query) { throw ChatError.validation("query", problem) }
        let rows = try await repository.listConversations(owner: owner, query: query, before: before, limit: size + 1)
        let shown = rows.prefix(size)
        return .init(conversations: shown.map(\.1), nextCursor: rows.count > size ? shown.last.map { String($0.0) } : nil)
    }

    func history(owner: String, conversation: String, cursor: String?, limit: Int?) async throws -> ChatInterface.History.Reply {
        let (before, size) = try Self.page(cursor, limit)
        let (rows, cut) = try await repository.history(owner: owner, conversation: conversation, before: before, limit: size + 1)
        let shown = rows.prefix(size)
        return .init(messages: shown.reversed().map(\.1), nextCursor: rows.count > size || cut ? shown.last.map { String($0.0) } : nil)
    }

    func text(_ raw: String) throws(ChatError) -> String {
        guard !raw.trimmingWhitespace().isEmpty else { throw .validation("text", "is empty") }
        if let problem = TextLimit(characters: options.maxMessageCharacters).violation(of: raw) { throw .validation("text", problem) }
        return raw
    }

    /// How the provider's stream ended.
    enum Ending: Sendable {
        case complete, cancelled
        case failed(String)
    }

    /// What a reply is asked with, settled before the provider is called.
    struct PreparedReply: Sendable {
        var conversation: String
        var replyID: String
        var options: ReplyOptions
        var turns: [ChatTurn]
        var remembers: Bool
    }

    /// `conversation`: the id (or client id) the caller gave.
    func send(
        owner: String, conversation requested: String, text raw: String, images: [String]? = nil, model: String?, temperature: Double?,
        writer: ReplyWriter<SendReply>, causedBy cause: (any Cause)?
    ) async throws -> SendReply {
        // 1. The lookups and the user's message, in a task that ends before the reply streams: a
        //    reply can take minutes, and the lookups' depth (calls to settings and payments over
        //    the bus) would be held by this task for as long (see `inTaskOfItsOwn`).
        let prepared = try await inTaskOfItsOwn { [self] in
            try await prepare(owner: owner, conversation: requested, text: raw, images: images, model: model, temperature: temperature, causedBy: cause)
        }
        return try await reply(prepared, owner: owner, writer: writer, causedBy: cause)
    }

    /// Checks the message, settles the model and the context, and commits the user's message
    /// (before the provider is called).
    private func prepare(
        owner: String, conversation requested: String, text raw: String, images requestedImages: [String]?, model requestedModel: String?, temperature: Double?,
        causedBy cause: (any Cause)?
    ) async throws -> PreparedReply {
        let conversation = try await repository.resolveConversation(owner: owner, id: requested, field: "conversationId")
        let text = try text(raw)
        let images = try ChatImages.ids(requestedImages)
        let replyOptions = ReplyOptions(model: try await model(requestedModel, for: owner).name, temperature: try Self.temperature(temperature))
        let remembers = try await memoryInUse(owner: owner, conversation: conversation)
        // The images go with the conversation before the message that shows them is committed.
        for image in images { try await lookups.attachImage(owner, image, conversation) }
        _ = try await repository.addUserMessage(
            owner: owner, conversation: conversation, id: try Self.newRecordID("m_"), text: text, images: images, now: now, causedBy: cause)
        let replyID = try Self.newRecordID("m_")
        var turns = try await withImageURLs(try await repository.context(owner: owner, conversation: conversation, budget: options.contextCharacters), owner: owner)
        if remembers, let known = try await memoryTurn(owner: owner) { turns.insert(known, at: 0) }
        if let prompt = options.systemPrompt, !prompt.isEmpty { turns.insert(ChatTurn(role: .system, text: prompt), at: 0) }
        return PreparedReply(conversation: conversation, replyID: replyID, options: replyOptions, turns: turns, remembers: remembers)
    }

    /// The context's images (file ids, `ChatRepository.context`) as URLs the model opens: the
    /// newest `ChatImages.perRequest`; older ones, and those gone, leave their text only.
    private func withImageURLs(_ turns: [ChatTurn], owner: String) async throws -> [ChatTurn] {
        var left = ChatImages.perRequest
        var turns = turns
        for index in turns.indices.reversed() where !turns[index].images.isEmpty {
            var urls: [String] = []
            for file in turns[index].images where left > 0 {
                if let url = try await lookups.imageURL(owner, file) {
                    urls.append(url)
                    left -= 1
                }
            }
            turns[index].images = urls
        }
        return turns
    }

    /// The conversation is deleted: the images that went with it go too (a failure is logged;
    /// the files stay the user's, listed with their usedBy).
    func releaseImages(owner: String, conversation: String) async {
        do { try await lookups.releaseImages(owner, conversation) } catch {
            logger.error("a deleted conversation's images could not be deleted", metadata: ["conversation": "\(conversation)", "error": "\(error)"])
        }
    }

    /// 2. and 3.: streams the reply and commits it. Each step a function of its own: a stream
    /// holds the async frames of its deepest moment (the provider's read), and the commit's
    /// locals in the same frame would be held by every open reply for as long.
    private func reply(_ prepared: PreparedReply, owner: String, writer: ReplyWriter<SendReply>, causedBy cause: (any Cause)?) async throws -> SendReply {
        try await writer.send(SendReply(messageId: prepared.replyID, delta: nil, message: nil))
        let streamed = await stream(prepared, owner: owner, writer: writer)
        return try await commit(prepared, streamed, owner: owner, causedBy: cause)
    }

    /// What the provider sent (as far as the caller was given it), and how the reply ended.
    struct Streamed: Sendable {
        var text = ""
        var usage: Usage?
        var ending = Ending.complete
    }

    /// 2. Streams the reply in this task. Cancel (from another connection) stops the provider
    ///    through `stop` while this call goes on to store what was sent and answer with it;
    ///    a closed connection cancels this task, which stops the provider too.
    @inline(never)
    private func stream(_ prepared: PreparedReply, owner: String, writer: ReplyWriter<SendReply>) async -> Streamed {
        let replyID = prepared.replyID
        let stop = StopSignal()
        running.add(replyID, owner: owner) { stop.stop() }
        defer { running.remove(replyID) }
        var streamed = Streamed()
        do {
            try await provider.reply(to: prepared.turns, options: prepared.options, stop: stop) { chunk in
                switch chunk {
                case .delta(let delta):
                    // Kept once handed to the caller's stream: a send interrupted by a
                    // cancel (it waits while the caller is not reading) is not stored, so
                    // the stored text is what the caller was given.
                    try await Self.deliver(delta, of: replyID, to: writer)
                    streamed.text += delta
                case .usage(let prompt, let completion):
                    streamed.usage = Usage(promptTokens: prompt, completionTokens: completion)
                }
            }
            streamed.ending = Task.isCancelled || stop.isStopped ? .cancelled : .complete
        } catch {
            if Task.isCancelled || stop.isStopped || error is CancellationError || error is StopSignal.Stopped {
                streamed.ending = .cancelled
            } else {
                streamed.ending = .failed((error as? ProviderError)?.reason ?? "\(error)")
            }
        }
        return streamed
    }

    /// One delta to the caller. A function of its own: an async function's context keeps a slot
    /// for each temporary of a reply it makes, and inlined in the provider's chunk closure they
    /// made that closure's context 1,232 bytes, more than a task allocator slab, allocated for
    /// each token (measured with a uprobe on swift_task_alloc). Now the closure's is 80 bytes
    /// and this function's 592, inside a slab.
    @inline(never)
    private static func deliver(_ delta: String, of replyID: String, to writer: ReplyWriter<SendReply>) async throws {
        try await writer.send(SendReply(messageId: replyID, delta: delta))
        // The provider's words reached the caller: the quota use stands, whatever happens to
        // the call from here on.
        writer.markUsed()
    }

    /// 3. The assistant's message is committed however it ended (a task of its own: a closed
    ///    connection must not stop the write). Even when the client has gone, the call ends
    ///    normally: its message was stored and the reply was produced (and paid for) until the
    ///    cancel, so the quota use stands.
    @inline(never)
    private func commit(_ prepared: PreparedReply, _ streamed: Streamed, owner: String, causedBy cause: (any Cause)?) async throws -> SendReply {
        let (status, error): (String, String?) =
            switch streamed.ending {
            case .complete: ("complete", nil)
            case .cancelled: ("cancelled", nil)
            case .failed(let reason): ("failed", reason)
            }
        let repository = self.repository, now = self.now
        // Unstructured: awaited at once; its own task so that a client leaving mid-reply does not cancel storing the reply.
        let message = try await Task {
            try await repository.finishReply(
                owner: owner, conversation: prepared.conversation, id: prepared.replyID, text: streamed.text, status: status, error: error,
                usage: streamed.usage, model: prepared.options.model, memoryPending: prepared.remembers && status == "complete", now: now, causedBy: cause)
        }.value
        return SendReply(messageId: prepared.replyID, delta: nil, message: message)
    }
}
