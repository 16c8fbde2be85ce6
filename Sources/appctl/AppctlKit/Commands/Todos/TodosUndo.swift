// SPDX-License-Identifier: Apache-2.0
import Contracts

struct TodosUndo: Leaf {
    static let path = ["todos", "undo"]
    static let abstract = "Mark a done todo open again."
    @Argument("id", "The todo's id, or any unique prefix or ending of it.") var id: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("todos undo needs one id", command: Self.command) }
        return TodosGroup.show(try context.json(TodosInterface.Reopen(id: id)), context)
    }
}
