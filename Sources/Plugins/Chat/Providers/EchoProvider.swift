// SPDX-License-Identifier: Apache-2.0
import Bus

/// The embedded default provider: no network, deterministic. It answers with the user's last
/// message ("Echo: …"), streamed word by word with `delay` between words. Its memory is
/// deterministic: "remember that …" adds what follows, "forget …" deletes the memories that
/// mention what follows.
public struct EchoProvider: LLMProvider {
    public var delay: Duration
    public var name: String { "echo" }

    public init(delay: Duration = .milliseconds(20)) { self.delay = delay }

    /// Stopped, it ends after the word it is waiting to send (within `delay`).
    public func reply(to turns: [ChatTurn], options: ReplyOptions, stop: StopSignal?, chunk: (ProviderChunk) async throws -> Void) async throws {
        let last = turns.last { $0.role == .user }?.text ?? ""
        let words = ("Echo: " + last).split(separator: " ", omittingEmptySubsequences: true)
        let prompt = turns.reduce(0) { $0 + $1.text.split(separator: " ").count }
        for (i, word) in words.enumerated() {
            if i > 0, delay > .zero { try await Task.sleep(for: delay) }
            if stop?.isStopped == true { throw StopSignal.Stopped() }
            try await chunk(.delta(i == 0 ? String(word) : " " + word))
        }
        try await chunk(.usage(promptTokens: prompt, completionTokens: words.count))
    }

    public func extractMemories(from message: String, existing: [MemoryFact], options: ReplyOptions) async throws -> [MemoryDecision] {
        MemoryExtraction.rules(message, existing: existing)
    }
}
