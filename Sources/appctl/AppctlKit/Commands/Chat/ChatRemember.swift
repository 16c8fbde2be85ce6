// SPDX-License-Identifier: Apache-2.0
import Contracts

struct ChatRemember: Leaf {
    static let path = ["chat", "remember"]
    static let abstract = "Add a memory: a fact chat keeps about you."
    @Arguments("text", "The fact (the words are joined).") var text: [String]

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard !text.isEmpty else { throw .usage("chat remember needs the text of the memory", command: Self.command) }
        let add = ChatInterface.AddMemory(text: text.joined(separator: " "))
        if context.options.json {
            context.output.reply(try context.json(add))
        } else {
            print(try context.call(add).memory.id)
        }
        return ExitCode.ok
    }
}
