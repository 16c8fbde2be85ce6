// SPDX-License-Identifier: Apache-2.0
import BusCore

struct EventsTail: Leaf {
    static let path = ["events", "tail"]
    static let abstract = "Print each event as it is published: time, sequence, topic and payload."
    static let discussion = """
        Topics may be patterns: 'todos.*' (one token), 'todos.>' (the rest), '>' (everything, the
        default). What arrives depends on who asks: an admin peer sees every event, a signed-in
        user the events about them. With --json, one JSON object per line, with each event's id,
        correlationId (the command that started it all) and causationId.
        """
    @Arguments("topic-or-pattern", optional: true, "Topics or patterns to follow (default: >).") var topics: [String]
    @Option("--since", "seq", "Replay from this position of the event log first.") var since: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        var position: Int64?
        if let since {
            guard let value = Int64(since), value >= 0 else {
                throw .usage("--since needs a sequence number, not '\(since)'", command: Self.command)
            }
            position = value
        }
        try context.stream(BusContract.Subscribe(topics: topics.isEmpty ? [">"] : topics, since: position)) { reply, _ in
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
