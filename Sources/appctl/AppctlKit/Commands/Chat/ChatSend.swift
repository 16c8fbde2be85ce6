// SPDX-License-Identifier: Apache-2.0
import Contracts

struct ChatSend: Leaf {
    static let path = ["chat", "send"]
    static let abstract = "Send one message and print its reply as it streams."
    @Arguments("text", "The message (the words are joined).") var text: [String]
    @Option("--conversation", "id", "Continue this conversation (default: a new one).") var conversation: String?
    @Flag("--temporary", "Start a temporary conversation: it neither reads nor writes memories.") var temporary: Bool
    @Option("--model", "name", "The model to answer (appctl chat models lists them).") var model: String?
    @Option("--temperature", "number", "How varied the answer is, 0 to 2.") var temperature: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard !text.isEmpty else { throw .usage("chat send needs the text of the message", command: Self.command) }
        if conversation != nil, temporary { throw .usage("--temporary starts a new conversation; leave out --conversation", command: Self.command) }
        let degrees = try temperature.map { text throws(AppctlError) in
            guard let value = Double(text) else { throw .usage("--temperature needs a number from 0 to 2", command: Self.command) }
            return value
        }
        let id: String
        if let conversation { id = conversation } else { id = try ChatSession.newConversation(context, temporary: temporary) }
        try ChatSession.send(ChatInterface.Send(conversationId: id, text: text.joined(separator: " "), model: model, temperature: degrees), context)
        return ExitCode.ok
    }
}
