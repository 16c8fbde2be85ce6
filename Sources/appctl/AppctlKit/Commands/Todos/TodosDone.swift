// SPDX-License-Identifier: Apache-2.0
import Contracts

struct TodosDone: Leaf {
    static let path = ["todos", "done"]
    static let abstract = "Mark a todo done."
    @Argument("id", "The todo's id, or any unique prefix or ending of it.") var id: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("todos done needs one id", command: Self.command) }
        return TodosGroup.show(try context.json(TodosInterface.Complete(id: id)), context)
    }
}
