// SPDX-License-Identifier: Apache-2.0
struct ChatInteractive: Leaf {
    static let path = ["chat"]
    static let abstract = "Chat interactively: each line you type is sent, its reply streams back."
    @Option("--conversation", "id", "Continue this conversation.") var conversation: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        try ChatSession.interactive(context, conversation: conversation)
    }
}
