/// One turn of the conversation sent to the model.
public struct ChatTurn: Sendable, Equatable {
    public enum Role: String, Sendable { case system, user, assistant }
    public var role: Role
    public var text: String
    public init(role: Role, text: String) {
        self.role = role
        self.text = text
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

/// The LLM client seam: turns a conversation into a stream of reply chunks. Cancelling the
/// consumer of the stream must stop the work (and close any upstream connection) at once.
public protocol LLMProvider: Sendable {
    var name: String { get }
    func reply(to turns: [ChatTurn]) -> AsyncThrowingStream<ProviderChunk, any Error>
}
