/// `appctl chat` (interactive), `chat send TEXT [--conversation ID]`, `chat ls [QUERY]`,
/// `chat history ID`, `chat rm ID`, `chat rename ID TITLE`. Any other word goes to the commands
/// derived from `io.appd.Chat`.
enum ChatGroup {
    static let group = CommandGroup(
        name: "chat", abstract: "Chat with the assistant: interactive, send, ls, history, rm, rename.",
        discussion: """
            With no subcommand: an interactive chat. Type a line, the reply prints as it streams; Ctrl-C cancels the reply (or, at the prompt, the line) and keeps the chat; Ctrl-D (or /quit) ends it. --conversation continues one; otherwise a new conversation starts.
            send prints one reply (a new conversation unless --conversation). With --json: one JSON object per streamed reply (delta, then the stored message).
            Needs 'appctl login' and 'appctl onboard'. Without pro, messages count against the daily free quota (exit code 68 when it is used up).
            """,
        leaves: [ChatSend.self, ChatList.self, ChatHistory.self, ChatRemove.self, ChatRename.self], fallback: ChatInteractive.self, derived: true)
}
