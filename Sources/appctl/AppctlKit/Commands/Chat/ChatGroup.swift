// SPDX-License-Identifier: Apache-2.0
/// `appctl chat` (interactive), `chat send TEXT [--conversation ID]`, `chat ls [QUERY]`,
/// `chat history ID`, `chat rm ID`, `chat rename ID TITLE`, `chat memories`, `chat remember
/// TEXT`, `chat forget ID|--all`, `chat models`. Any other word goes to the commands derived
/// from `io.appd.Chat`.
enum ChatGroup {
    static let group = CommandGroup(
        name: "chat", abstract: "Chat with the assistant: interactive, send, ls, history, rm, rename, memories, remember, forget, models.",
        discussion: """
            With no subcommand: an interactive chat. Type a line, the reply prints as it streams; Ctrl-C cancels the reply (or, at the prompt, the line) and keeps the \
            chat; Ctrl-D (or /quit) ends it. --conversation continues one; otherwise a new conversation starts.
            send prints one reply (a new conversation unless --conversation; --temporary makes it one that neither reads nor writes memories; --model and --temperature \
            choose how it is answered). With --json: one JSON object per streamed reply (delta, then the stored message).
            Chat remembers facts you state ("remember that I prefer metric units"): memories lists them, forget deletes one or --all, remember adds one; 'appctl settings \
            set chat.memory false' turns memory off.
            Needs 'appctl login' and 'appctl onboard'. Without pro, messages count against the daily free quota (exit code 68 when it is used up).
            """,
        leaves: [
            ChatSend.self, ChatList.self, ChatHistory.self, ChatRemove.self, ChatRename.self, ChatMemories.self, ChatRemember.self, ChatForget.self,
            ChatModelsList.self,
        ], fallback: ChatInteractive.self, derived: true)
}
