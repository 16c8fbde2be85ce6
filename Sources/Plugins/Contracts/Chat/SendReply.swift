// SPDX-License-Identifier: Apache-2.0
/// One reply of `io.appd.Chat.Send`: the reply's id first, then a delta per piece of text,
/// then the stored message.
public struct SendReply: Codable, Sendable, Equatable {
    public var messageId: String
    public var delta: String?
    /// The stored message (the last reply). Kept boxed: a reply goes through every async frame
    /// between the provider and the wire once per token, and each frame keeps a slot for each
    /// copy it makes; with a message inline a reply is ~250 bytes and a delta's frames grew past
    /// the task allocator's slab (1,232 bytes, for each token); boxed, a reply is 40 bytes.
    public var message: ChatMessage? {
        get { boxed?.message }
        set { boxed = newValue.map(MessageBox.init) }
    }
    private var boxed: MessageBox?

    public init(messageId: String, delta: String? = nil, message: ChatMessage? = nil) {
        self.messageId = messageId
        self.delta = delta
        self.boxed = message.map(MessageBox.init)
    }

    private final class MessageBox: Sendable {
        let message: ChatMessage
        init(_ message: ChatMessage) { self.message = message }
    }

    // The JSON and the equality the members would have by themselves (`message` as a member).
    enum CodingKeys: String, CodingKey { case messageId, delta, message }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            messageId: try container.decode(String.self, forKey: .messageId), delta: try container.decodeIfPresent(String.self, forKey: .delta),
            message: try container.decodeIfPresent(ChatMessage.self, forKey: .message))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(messageId, forKey: .messageId)
        try container.encodeIfPresent(delta, forKey: .delta)
        try container.encodeIfPresent(message, forKey: .message)
    }

    public static func == (lhs: SendReply, rhs: SendReply) -> Bool {
        lhs.messageId == rhs.messageId && lhs.delta == rhs.delta && lhs.message == rhs.message
    }
}
