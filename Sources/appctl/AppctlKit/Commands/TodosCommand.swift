import BusCore
import Contracts
import Varlink

/// `appctl todos add|ls|done|undo|edit|rm|clear`: the todo list by hand. Any other word goes
/// to the commands derived from `io.appd.Todos` (`appctl todos get --id …`).
enum TodosCommand {
    static let command = Builtin(
        name: "todos", abstract: "Your todos: add, ls, done, undo, edit, rm, clear.",
        usage: "todos <add TITLE [--notes N] [--due T] | ls [--open|--done] | done ID | undo ID | edit ID [--title T] [--notes N] [--due T] | rm ID | clear>",
        discussion: "IDs may be shortened to any unique prefix (ls shows 8 characters). --due takes RFC 3339 (2026-12-24T18:00:00Z). Needs 'appctl login' and 'appctl onboard'.",
        options: [TodosCommand.notes, TodosCommand.due, TodosCommand.title, TodosCommand.open, TodosCommand.done]
    ) { arguments, context throws(AppctlError) in
        guard let verb = arguments.first else {
            throw .usage("todos needs a verb: add, ls, done, undo, edit, rm, clear", command: "todos")
        }
        let rest = Array(arguments.dropFirst())
        switch verb {
        case "add":
            let flags = try Flags(rest, accepting: [TodosCommand.notes, TodosCommand.due], command: "todos")
            guard !flags.positionals.isEmpty else { throw .usage("todos add needs a title", command: "todos") }
            let add = TodosInterface.Add(title: flags.positionals.joined(separator: " "), notes: flags.value("--notes"), dueAt: flags.value("--due"))
            return show(try context.json(add), context)
        case "ls":
            let flags = try Flags(rest, accepting: [TodosCommand.open, TodosCommand.done], command: "todos")
            try flags.noMoreArguments(in: "todos ls")
            let filter = flags.switches.contains("--open") ? "open" : flags.switches.contains("--done") ? "done" : "all"
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
                    ["id": .string(String(todo.id.prefix(8))), "done": todo.done ? "✓" : "", "title": .string(todo.title), "due": todo.dueAt.map(JSONValue.string) ?? .null]
                }
                print(Output.table(rows, order: ["id", "done", "title", "due"]), terminator: "")
            }
            return ExitCode.ok
        case "done", "undo", "rm":
            let flags = try Flags(rest, command: "todos")
            guard flags.positionals.count == 1, let id = flags.positionals.first else { throw .usage("todos \(verb) needs one id", command: "todos") }
            let reply =
                verb == "done"
                ? try context.json(TodosInterface.Complete(id: id))
                : verb == "undo" ? try context.json(TodosInterface.Reopen(id: id)) : try context.json(TodosInterface.Delete(id: id))
            if verb == "rm" {
                if context.options.json { context.output.reply(reply) } else { print("deleted") }
                return ExitCode.ok
            }
            return show(reply, context)
        case "edit":
            let flags = try Flags(rest, accepting: [TodosCommand.title, TodosCommand.notes, TodosCommand.due], command: "todos")
            guard flags.positionals.count == 1, let id = flags.positionals.first else { throw .usage("todos edit needs one id", command: "todos") }
            let update = TodosInterface.Update(id: id, title: flags.value("--title"), notes: flags.value("--notes"), dueAt: flags.value("--due"))
            return show(try context.json(update), context)
        case "clear":
            try Flags(rest, command: "todos").noMoreArguments(in: "todos clear")
            if context.options.json {
                context.output.reply(try context.json(TodosInterface.ClearCompleted()))
            } else {
                print("deleted \(try context.call(TodosInterface.ClearCompleted()).deleted) completed todo(s)")
            }
            return ExitCode.ok
        default:
            return try DerivedCommand.run(interfaceWord: "todos", arguments, options: context.options)
        }
    }

    /// One todo: a line for people, the reply for scripts.
    static func show(_ reply: JSONValue, _ context: Context) -> Int32 {
        if context.options.json {
            context.output.reply(reply)
        } else if let todo = try? reply.decode(as: TodosInterface.TodoReply.self).todo {
            print("\(todo.id.prefix(8))  [\(todo.done ? "✓" : " ")] \(todo.title.escapingControlCharacters())")
        }
        return ExitCode.ok
    }
}

extension TodosCommand {
    static let notes = CommandOption("--notes", value: "text", "Notes for the todo (edit: empty clears them).")
    static let due = CommandOption("--due", value: "time", "When it is due, RFC 3339 (edit: empty clears it).")
    static let title = CommandOption("--title", value: "text", "(edit) The new title.")
    static let open = CommandOption("--open", "(ls) Only open todos.")
    static let done = CommandOption("--done", "(ls) Only done todos.")
}
