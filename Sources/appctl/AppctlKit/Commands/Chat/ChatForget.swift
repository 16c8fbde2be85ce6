// SPDX-License-Identifier: Apache-2.0
import Contracts

struct ChatForget: Leaf {
    static let path = ["chat", "forget"]
    static let abstract = "Delete a memory, or with --all every memory."
    @Argument("id", "The memory's id (appctl chat memories lists them).") var id: String?
    @Flag("--all", "Delete every memory.") var all: Bool

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        switch (id, all) {
        case (nil, true):
            if context.options.json {
                context.output.reply(try context.json(ChatInterface.ClearMemories()))
            } else {
                print("deleted \(try context.call(ChatInterface.ClearMemories()).deleted) memories")
            }
        case (let id?, false):
            let reply = try context.json(ChatInterface.DeleteMemory(id: id))
            if context.options.json { context.output.reply(reply) } else { print("deleted") }
        default:
            throw .usage("chat forget needs one memory id, or --all", command: Self.command)
        }
        return ExitCode.ok
    }
}
