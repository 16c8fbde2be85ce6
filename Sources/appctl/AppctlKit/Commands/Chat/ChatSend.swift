struct ChatSend: Leaf {
    static let path = ["chat", "send"]
    static let abstract = "Send one message and print its reply as it streams."
    @Arguments("text", "The message (the words are joined).") var text: [String]
    @Option("--conversation", "id", "Continue this conversation (default: a new one).") var conversation: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard !text.isEmpty else { throw .usage("chat send needs the text of the message", command: Self.command) }
        let id: String
        if let conversation { id = conversation } else { id = try ChatSession.newConversation(context) }
        try ChatSession.send(text.joined(separator: " "), in: id, context)
        return ExitCode.ok
    }
}
