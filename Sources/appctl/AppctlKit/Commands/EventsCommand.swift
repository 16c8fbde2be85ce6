import Bus

/// `appctl events tail [--since N] [TOPIC…]`.
enum EventsCommand {
    static let command = Builtin(
        name: "events", abstract: "Follow the events plugins publish.",
        usage: "events tail [--since <seq>] [<topic-or-pattern> ...]",
        discussion: """
            Prints each event as it is published: time, sequence, topic and payload. Topics may be
            patterns: 'todos.*' (one token), 'todos.>' (the rest), '>' (everything, the default).
            With --json, one JSON object per line.
            """,
        options: """
              --since <seq>           Replay from this position of the event log first.
            """,
        reserved: ["--since"]
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, valued: ["--since"], command: "events")
        guard flags.positionals.first == "tail" else {
            throw .usage("events needs the subcommand 'tail'" + Suggestions.hint(for: flags.positionals.first ?? "", in: ["tail"]), command: "events")
        }
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
                print("\(event["time"]?.stringValue ?? "")  \(seq)  \(event["topic"]?.stringValue ?? "")  \((event["payload"] ?? [:]).jsonText)\(dropped)")
            }
        }
        return ExitCode.ok
    }
}
