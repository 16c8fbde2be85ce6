import BusCore
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
            var parameters: [String: JSONValue] = ["title": .string(flags.positionals.joined(separator: " "))]
            if let notes = flags.value("--notes") { parameters["notes"] = .string(notes) }
            if let due = flags.value("--due") { parameters["dueAt"] = .string(due) }
            return show(try context.call("io.appd.Todos.Add", .object(parameters)), context)
        case "ls":
            let flags = try Flags(rest, accepting: [TodosCommand.open, TodosCommand.done], command: "todos")
            try flags.noMoreArguments(in: "todos ls")
            let filter = flags.switches.contains("--open") ? "open" : flags.switches.contains("--done") ? "done" : "all"
            var todos: [JSONValue] = []
            var cursor: JSONValue = .null
            repeat {
                let page = try context.call("io.appd.Todos.List", ["filter": .string(filter), "cursor": cursor, "limit": 500])
                if case .array(let list)? = page["todos"] { todos += list }
                cursor = page["nextCursor"] ?? .null
            } while cursor != .null
            if context.options.json {
                for todo in todos { print(todo.jsonText) }
            } else if todos.isEmpty {
                print("no todos")
            } else {
                let rows = todos.compactMap(\.objectValue).map { todo -> [String: JSONValue] in
                    [
                        "id": .string(String((todo["id"]?.stringValue ?? "").prefix(8))), "done": todo["done"] == .bool(true) ? "✓" : "",
                        "title": todo["title"] ?? "", "due": todo["dueAt"] ?? .null,
                    ]
                }
                print(Output.table(rows, order: ["id", "done", "title", "due"]), terminator: "")
            }
            return ExitCode.ok
        case "done", "undo", "rm":
            let flags = try Flags(rest, command: "todos")
            guard flags.positionals.count == 1, let id = flags.positionals.first else { throw .usage("todos \(verb) needs one id", command: "todos") }
            let method = verb == "done" ? "io.appd.Todos.Complete" : verb == "undo" ? "io.appd.Todos.Reopen" : "io.appd.Todos.Delete"
            let reply = try context.call(method, ["id": .string(id)])
            if verb == "rm" {
                if context.options.json { context.output.reply(reply) } else { print("deleted") }
                return ExitCode.ok
            }
            return show(reply, context)
        case "edit":
            let flags = try Flags(rest, accepting: [TodosCommand.title, TodosCommand.notes, TodosCommand.due], command: "todos")
            guard flags.positionals.count == 1, let id = flags.positionals.first else { throw .usage("todos edit needs one id", command: "todos") }
            var parameters: [String: JSONValue] = ["id": .string(id)]
            if let title = flags.value("--title") { parameters["title"] = .string(title) }
            if let notes = flags.value("--notes") { parameters["notes"] = .string(notes) }
            if let due = flags.value("--due") { parameters["dueAt"] = .string(due) }
            return show(try context.call("io.appd.Todos.Update", .object(parameters)), context)
        case "clear":
            try Flags(rest, command: "todos").noMoreArguments(in: "todos clear")
            let reply = try context.call("io.appd.Todos.ClearCompleted")
            if context.options.json { context.output.reply(reply) } else { print("deleted \(Output.scalar(reply["deleted"] ?? 0)) completed todo(s)") }
            return ExitCode.ok
        default:
            return try DerivedCommand.run(interfaceWord: "todos", arguments, options: context.options)
        }
    }

    /// One todo: a line for people, the reply for scripts.
    static func show(_ reply: JSONValue, _ context: Context) -> Int32 {
        if context.options.json {
            context.output.reply(reply)
        } else if let todo = reply["todo"] {
            let id = String((todo["id"]?.stringValue ?? "").prefix(8))
            let mark = todo["done"] == .bool(true) ? "✓" : " "
            print("\(id)  [\(mark)] \((todo["title"]?.stringValue ?? "").escapingControlCharacters())")
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
