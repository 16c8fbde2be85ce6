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
            if context.options.json {
                context.output.reply(try context.json(BusContract.Topics()))
            } else {
                let rows = try context.call(BusContract.Topics()).topics.compactMap { (try? JSONValue(encoding: $0))?.objectValue }
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
        var since: Int64?
        if let given = flags.value("--since") {
            guard let position = Int64(given), position >= 0 else {
                throw .usage("--since needs a sequence number, not '\(given)'", command: "events")
            }
            since = position
        }
        try context.stream(BusContract.Subscribe(topics: topics, since: since)) { reply, _ in
            if context.options.json {
                print(reply.jsonText)
            } else if let event = try? reply.decode(as: SubscribedEvent.self) {
                let seq = event.seq.map(String.init) ?? "-"
                let dropped = event.dropped == 0 ? "" : "  (missed \(event.dropped))"
                let payload = event.redacted == true ? "(redacted: the account was deleted)" : event.payload.jsonText
                print("\(event.time)  \(seq)  \(event.topic)  \(payload)\(dropped)".escapingControlCharacters())
            }
        }
        return ExitCode.ok
    }
}

extension EventsCommand {
    static let since = CommandOption("--since", value: "seq", "Replay from this position of the event log first.")
}
