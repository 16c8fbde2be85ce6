// SPDX-License-Identifier: Apache-2.0
import Contracts

struct TodosRemove: Leaf {
    static let path = ["todos", "rm"]
    static let abstract = "Delete a todo."
    @Argument("id", "The todo's id, or any unique prefix or ending of it.") var id: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("todos rm needs one id", command: Self.command) }
        let reply = try context.json(TodosInterface.Delete(id: id))
        if context.options.json { context.output.reply(reply) } else { print("deleted") }
        return ExitCode.ok
    }
}
