// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct ChatHistory: Leaf {
    static let path = ["chat", "history"]
    static let abstract = "Print a conversation's messages, oldest first."
    @Argument("id", "The conversation's id.") var id: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("chat history needs one conversation id", command: Self.command) }
        var messages: [ChatMessage] = []
        var cursor: String?
        repeat {
            let page = try context.call(ChatInterface.History(conversationId: id, cursor: cursor, limit: 200))
            messages = page.messages + messages
            cursor = page.nextCursor
        } while cursor != nil
        for message in messages {
            if context.options.json {
                print(((try? JSONValue(encoding: message)) ?? .null).jsonText)
            } else {
                let who = message.role == "user" ? "you" : "assistant"
                print("\(who)\(message.status == "complete" ? "" : " (\(message.status))"): \(message.text)")
            }
        }
        return ExitCode.ok
    }
}
