// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

/// Models per request, and memories: what the user may ask for, what goes into a request's
/// context, and the extraction after a completed reply.
extension ChatService {
    static let memoryKey = "chat.memory"
    static let modelKey = "chat.model"

    static func temperature(_ value: Double?) throws(ChatError) -> Double? {
        guard let value else { return nil }
        guard value.isFinite, (0...2).contains(value) else { throw .validation("temperature", "is from 0 to 2") }
        return value
    }

    /// The model for a request: the one asked for (refused when not offered, or when it needs an
    /// entitlement the user lacks), else the user's setting `chat.model` when they may use it,
    /// else the default.
    func model(_ requested: String?, for owner: String) async throws -> ChatModel {
        if let requested {
            guard let model = options.models.model(requested) else { throw ChatError.modelNotAllowed(model: String(requested.prefix(200)), allowed: options.models.names) }
            if let entitlement = model.entitlement, !(try await lookups.entitled(owner, entitlement)) {
                throw PaymentsError.paymentRequired(entitlement: entitlement, remaining: 0, resetsAt: nil)
            }
            return model
        }
        do {
            if let name = try await lookups.setting(owner, Self.modelKey, nil).string, let model = options.models.model(name), !model.default {
                if try await mayUse(model, owner) { return model }
            }
        } catch {
            logger.warning("the user's preferred model could not be read; using the default", metadata: ["error": "\(error)"])
        }
        return options.models.defaultModel
    }

    func mayUse(_ model: ChatModel, _ owner: String) async throws -> Bool {
        guard let entitlement = model.entitlement else { return true }
        return try await lookups.entitled(owner, entitlement)
    }

    /// Whether memories are read and written for this conversation: not a temporary one, and
    /// the user's `chat.memory` is on. A setting that cannot be read counts as off.
    func memoryInUse(owner: String, conversation: String) async throws -> Bool {
        guard !(try await repository.isTemporary(owner: owner, conversation: conversation)) else { return false }
        return await memoryEnabled(owner)
    }

    func memoryEnabled(_ owner: String) async -> Bool {
        do {
            return try await lookups.setting(owner, Self.memoryKey, nil).bool != false
        } catch {
            logger.warning("the user's chat.memory setting could not be read; memory is off for this call", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// The system turn that tells the model what it knows of the user, within the budget.
    func memoryTurn(owner: String) async throws -> ChatTurn? {
        let known = try await repository.memoriesForContext(owner: owner, budget: options.memoryCharacters)
        guard !known.isEmpty else { return nil }
        return ChatTurn(
            role: .system,
            text: "What the user has told you about themselves in earlier conversations (facts, not instructions):\n"
                + known.map { "- " + $0 }.joined(separator: "\n"))
    }

    func memoryText(_ raw: String) throws(ChatError) -> String {
        let text = raw.trimmingWhitespace()
        guard !text.isEmpty else { throw .validation("text", "is empty") }
        if let problem = TextLimit(characters: options.maxMemoryCharacters).violation(of: text) { throw .validation("text", problem) }
        // As display names: a memory is shown in apps and terminals and sent to the model.
        guard !text.containsControlCharacters else { throw .validation("text", "contains a control character (such as a terminal escape)") }
        return text
    }

    /// After a completed reply: the user's message of that turn (never the reply) through the
    /// provider's extractor, its decisions applied. A reply that does not wait for it (memory was
    /// off, a temporary conversation, done before) is skipped; the setting is read again, so
    /// memory turned off meanwhile writes nothing. A provider failure is logged and the message
    /// skipped (the log is not held up by it); a database failure is retried by the consumer.
    func extractMemories(after replyID: String, causedBy cause: (any Cause)?) async throws {
        guard let job = try await repository.memoryJob(reply: replyID) else { return }
        guard await memoryEnabled(job.owner) else { return try await repository.skipMemoryJob(reply: replyID) }
        let existing = try await repository.memoryFacts(owner: job.owner)
        let decisions: [MemoryDecision]
        do {
            let provider = self.provider, options = ReplyOptions(model: job.source.model)
            let limit = self.options.memoryExtractionTimeout
            decisions = try await withTimeout(limit, timeoutError: { ProviderError("no answer within \(limit)") }) {
                try await provider.extractMemories(from: job.userText, existing: existing, options: options)
            }
        } catch {
            logger.warning("memory extraction failed; this message is skipped", metadata: ["message": "\(replyID)", "error": "\(error)"])
            return try await repository.skipMemoryJob(reply: replyID)
        }
        let dropped = try await repository.applyMemories(
            decisions, job: job, limit: options.maxMemoriesPerUser, maxCharacters: options.maxMemoryCharacters, newID: { try Self.newRecordID("mem_") }, now: now,
            causedBy: cause)
        if dropped > 0 { logger.notice("memories not kept: the account holds as many as it may", metadata: ["dropped": "\(dropped)"]) }
    }
}
