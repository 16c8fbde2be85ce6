// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Testing

/// `SendReply` keeps its message boxed; its JSON and its equality are those of its three members.
@Suite struct SendReplyTests {
    static let message = ChatMessage(
        id: "m_2", conversationId: "c_1", role: "assistant", text: "Hi", status: "complete", usage: Usage(promptTokens: 3, completionTokens: 1),
        createdAt: "2026-12-04T03:00:00Z")

    @Test func itsJSONHasTheMembersThatArePresent() throws {
        #expect(try JSONValue(encoding: SendReply(messageId: "m_2")) == ["messageId": "m_2"])
        #expect(try JSONValue(encoding: SendReply(messageId: "m_2", delta: "Hi")) == ["messageId": "m_2", "delta": "Hi"])
        let last = try JSONValue(encoding: SendReply(messageId: "m_2", message: Self.message))
        #expect(last == ["messageId": "m_2", "message": try JSONValue(encoding: Self.message)])
        #expect(JSONWriter.bytes(last) == (try JSONBytesEncoder.encode(SendReply(messageId: "m_2", message: Self.message))))
    }

    @Test func itDecodesToWhatWasEncodedAndComparesByItsMembers() throws {
        for reply in [SendReply(messageId: "m_2"), SendReply(messageId: "m_2", delta: "Hi"), SendReply(messageId: "m_2", message: Self.message)] {
            let decoded = try JSONValue(encoding: reply).decode(as: SendReply.self)
            #expect(decoded == reply)
        }
        var changed = SendReply(messageId: "m_2", message: Self.message)
        #expect(changed == SendReply(messageId: "m_2", message: Self.message), "equal messages in different boxes")
        changed.message?.text = "Hello"
        #expect(changed.message?.text == "Hello")
        #expect(changed != SendReply(messageId: "m_2", message: Self.message))
        changed.message = nil
        #expect(changed == SendReply(messageId: "m_2"))
    }
}
