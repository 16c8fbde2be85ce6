// SPDX-License-Identifier: Apache-2.0
import Contracts

struct ChatRename: Leaf {
    static let path = ["chat", "rename"]
    static let abstract = "Give a conversation a new title."
    @Argument("id", "The conversation's id.") var id: String?
    @Arguments("title", "The new title (the words are joined).") var title: [String]

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id, !title.isEmpty else { throw .usage("chat rename needs a conversation id and a title", command: Self.command) }
        let rename = ChatInterface.RenameConversation(id: id, title: title.joined(separator: " "))
        if context.options.json {
            context.output.reply(try context.json(rename))
        } else {
            print((try context.call(rename).conversation.title ?? "").escapingControlCharacters())
        }
        return ExitCode.ok
    }
}
