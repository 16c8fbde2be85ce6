// SPDX-License-Identifier: Apache-2.0
import Contracts

struct TodosAdd: Leaf {
    static let path = ["todos", "add"]
    static let abstract = "Add a todo."
    @Arguments("title", "The title (the words are joined).") var title: [String]
    @Option("--notes", "text", "Notes for the todo.") var notes: String?
    @Option("--due", "time", "When it is due, RFC 3339.") var due: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard !title.isEmpty else { throw .usage("todos add needs a title", command: Self.command) }
        return TodosGroup.show(try context.json(TodosInterface.Add(title: title.joined(separator: " "), notes: notes, dueAt: due)), context)
    }
}
