import BusCore
import Varlink

/// `appctl events tail [--since N] [TOPIC…]` and `appctl events topics`.
enum EventsCommand {
    static let command = Builtin(
        name: "events", abstract: "Follow the events plugins publish, or list their topics.",
        usage: "events [tail [--since <seq>] [<topic-or-pattern> ...] | topics]",
        discussion: """
            tail prints each event as it is published: time, sequence, topic and payload. Topics may
            be patterns: 'todos.*' (one token), 'todos.>' (the rest), '>' (everything, the default).
            What arrives depends on who asks: an admin peer sees every event, a signed-in user the
            events about them. With --json, one JSON object per line, with each event's id,
            correlationId (the command that started it all) and causationId.

            topics lists every topic plugins' event types own: payload type (varlink IDL), audience
            (owner, admin, capability:NAME), whether it is logged, and its publisher.
            """,
        options: [EventsCommand.since]
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, accepting: [EventsCommand.since], command: "events")
        switch flags.positionals.first {
        case "tail": return try tail(flags, context)
        case "topics":
            try flags.noMoreArguments(than: 1, in: "events topics")
            let reply = try context.call("io.appd.Bus.Topics")
            if context.options.json {
                context.output.reply(reply)
            } else if case .array(let topics)? = reply["topics"] {
                let rows = topics.compactMap(\.objectValue)
                print(Output.table(rows, order: ["topic", "version", "audience", "durable", "publisher", "payload"]), terminator: "")
            }
            return ExitCode.ok
        default:
            let given = flags.positionals.first ?? ""
            throw .usage("events needs the subcommand 'tail' or 'topics'" + Suggestions.hint(for: given, in: ["tail", "topics"]), command: "events")
        }
    }

    private static func tail(_ flags: Flags, _ context: Context) throws(AppctlError) -> Int32 {
        let topics = flags.positionals.dropFirst().isEmpty ? [">"] : Array(flags.positionals.dropFirst())
        var parameters: [String: JSONValue] = ["topics": .array(topics.map(JSONValue.string))]
        if let since = flags.value("--since") {
            guard let position = Int64(since), position >= 0 else {
                throw .usage("--since needs a sequence number, not '\(since)'", command: "events")
            }
            parameters["since"] = .int(position)
        }
        try context.stream("io.appd.Bus.Subscribe", .object(parameters)) { event, _ in
            if context.options.json {
                print(event.jsonText)
            } else {
                let seq = event["seq"].map(Output.scalar) ?? "-"
                let missed = event["dropped"].map(Output.scalar) ?? "0"
                let dropped = missed == "0" ? "" : "  (missed \(missed))"
                let payload = event["redacted"] == true ? "(redacted: the account was deleted)" : (event["payload"] ?? [:]).jsonText
                let line = "\(event["time"]?.stringValue ?? "")  \(seq)  \(event["topic"]?.stringValue ?? "")  \(payload)\(dropped)"
                print(line.escapingControlCharacters())
            }
        }
        return ExitCode.ok
    }
}

extension EventsCommand {
    static let since = CommandOption("--since", value: "seq", "Replay from this position of the event log first.")
}
