// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

/// `appctl todos add|ls|done|undo|edit|rm|clear`: the todo list by hand. Any other word goes
/// to the commands derived from `io.appd.Todos` (`appctl todos get --id …`).
enum TodosGroup {
    static let group = CommandGroup(
        name: "todos", abstract: "Your todos: add, ls, done, undo, edit, rm, clear.",
        discussion:
            "IDs may be shortened to any unique prefix or ending (ls shows the last 6 characters). --due takes RFC 3339 (2026-12-24T18:00:00Z). Needs 'appctl login' and "
            + "'appctl onboard'.",
        leaves: [TodosAdd.self, TodosList.self, TodosDone.self, TodosUndo.self, TodosEdit.self, TodosRemove.self, TodosClear.self], derived: true)

    /// One todo: a line for people, the reply for scripts.
    static func show(_ reply: JSONValue, _ context: Context) -> Int32 {
        if context.options.json {
            context.output.reply(reply)
        } else if let todo = try? reply.decode(as: TodosInterface.TodoReply.self).todo {
            print("\(shortID(todo.id))  [\(todo.done ? "✓" : " ")] \(todo.title.escapingControlCharacters())")
        }
        return ExitCode.ok
    }

    /// What a list shows of an id: its last 6 characters (ids the server makes begin with their
    /// time, so their beginnings are alike; any unique ending is taken back), one more while it
    /// would begin with `-`: typed back as an argument, that would read as an option.
    static func shortID(_ id: String) -> String {
        var length = 6
        while length < id.count, id.suffix(length).first == "-" { length += 1 }
        return String(id.suffix(length))
    }
}
