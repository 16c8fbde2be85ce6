// SPDX-License-Identifier: Apache-2.0
import Contracts

struct TodosEdit: Leaf {
    static let path = ["todos", "edit"]
    static let abstract = "Change a todo's title, notes or due time."
    @Argument("id", "The todo's id, or any unique prefix or ending of it.") var id: String?
    @Option("--title", "text", "The new title.") var title: String?
    @Option("--notes", "text", "The new notes (empty clears them).") var notes: String?
    @Option("--due", "time", "The new due time, RFC 3339 (empty clears it).") var due: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("todos edit needs one id", command: Self.command) }
        return TodosGroup.show(try context.json(TodosInterface.Update(id: id, title: title, notes: notes, dueAt: due)), context)
    }
}
