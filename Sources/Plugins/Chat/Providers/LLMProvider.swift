// SPDX-License-Identifier: Apache-2.0
import Bus

/// One turn of the conversation sent to the model.
public struct ChatTurn: Sendable, Equatable {
    public enum Role: String, Sendable { case system, user, assistant }
    public var role: Role
    public var text: String
    /// Images given with a user's turn, as URLs the model can open: `data:` URLs or signed
    /// `https:` URLs (`ChatPlugin.Options.imageBaseURL`).
    public var images: [String]
    public init(role: Role, text: String, images: [String] = []) {
        self.role = role
        self.text = text
        self.images = images
    }
}

/// What a provider streams back.
public enum ProviderChunk: Sendable, Equatable {
    /// The next piece of the reply's text.
    case delta(String)
    /// Token counts, when the provider reports them.
    case usage(promptTokens: Int, completionTokens: Int)
}

/// The reply could not be produced; `reason` is safe to store and show (no secrets).
public struct ProviderError: Error, CustomStringConvertible, Equatable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// What a request asks of the model beyond the conversation.
public struct ReplyOptions: Sendable, Equatable {
    /// nil: the provider's configured model.
    public var model: String?
    public var temperature: Double?
    public init(model: String? = nil, temperature: Double? = nil) {
        self.model = model
        self.temperature = temperature
    }
}

/// The LLM client seam: turns a conversation into reply chunks, and a user's message into
/// decisions about their memories.
public protocol LLMProvider: Sendable {
    var name: String { get }
    /// Produces the reply to `turns`, handing each chunk to `chunk` as it arrives, in the
    /// caller's task: no task or buffer in between (while `chunk` waits, the provider waits),
    /// so an open reply costs no more than the caller's own task. Returns once the reply is
    /// complete; throws `ProviderError` when it cannot be produced, and what `chunk` throws as
    /// is. Cancelling the caller, or stopping `stop` (`Chat.Cancel`), must stop the work (and
    /// close any upstream connection) at once: no chunk is handed on after it; stopped, it
    /// returns or throws `StopSignal.Stopped` (a wait between attempts or words may first run
    /// out, with no upstream connection open).
    func reply(to turns: [ChatTurn], options: ReplyOptions, stop: StopSignal?, chunk: (ProviderChunk) async throws -> Void) async throws
    /// What to add, update or delete among `existing` given what the user said in `message`
    /// (their own words only). By default the model is asked with `MemoryExtraction`'s prompt.
    func extractMemories(from message: String, existing: [MemoryFact], options: ReplyOptions) async throws -> [MemoryDecision]
}

extension LLMProvider {
    public func reply(to turns: [ChatTurn], options: ReplyOptions = ReplyOptions(), chunk: (ProviderChunk) async throws -> Void) async throws {
        try await reply(to: turns, options: options, stop: nil, chunk: chunk)
    }

    public func extractMemories(from message: String, existing: [MemoryFact], options: ReplyOptions) async throws -> [MemoryDecision] {
        var text = ""
        try await reply(to: MemoryExtraction.turns(message: message, existing: existing), options: options) { chunk in
            if case .delta(let delta) = chunk { text += delta }
            guard text.utf8.count <= MemoryExtraction.maxAnswerBytes else {
                throw ProviderError("the memory extraction answer is longer than \(MemoryExtraction.maxAnswerBytes) bytes")
            }
        }
        return try MemoryExtraction.decisions(from: text, existing: existing)
    }
}
