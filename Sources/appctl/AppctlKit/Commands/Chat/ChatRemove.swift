// SPDX-License-Identifier: Apache-2.0
import Contracts

struct ChatRemove: Leaf {
    static let path = ["chat", "rm"]
    static let abstract = "Delete a conversation."
    @Argument("id", "The conversation's id.") var id: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("chat rm needs one conversation id", command: Self.command) }
        let reply = try context.json(ChatInterface.DeleteConversation(id: id))
        if context.options.json { context.output.reply(reply) } else { print("deleted") }
        return ExitCode.ok
    }
}
