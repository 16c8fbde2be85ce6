// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct TodosList: Leaf {
    static let path = ["todos", "ls"]
    static let abstract = "List your todos, oldest first."
    @Flag("--open", "Only open todos.") var open: Bool
    @Flag("--done", "Only done todos.") var done: Bool

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let filter = open ? "open" : done ? "done" : "all"
        var todos: [Todo] = []
        var cursor: String?
        repeat {
            let page = try context.call(TodosInterface.List(filter: filter, cursor: cursor, limit: 500))
            todos += page.todos
            cursor = page.nextCursor
        } while cursor != nil
        if context.options.json {
            for todo in todos { print(((try? JSONValue(encoding: todo)) ?? .null).jsonText) }
        } else if todos.isEmpty {
            print("no todos")
        } else {
            let rows = todos.map { todo -> [String: JSONValue] in
                ["id": .string(TodosGroup.shortID(todo.id)), "done": todo.done ? "✓" : "", "title": .string(todo.title), "due": todo.dueAt.map(JSONValue.string) ?? .null]
            }
            print(Output.table(rows, order: ["id", "done", "title", "due"]), terminator: "")
        }
        return ExitCode.ok
    }
}
