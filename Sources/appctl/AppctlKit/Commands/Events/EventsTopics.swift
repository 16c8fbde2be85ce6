// SPDX-License-Identifier: Apache-2.0
import BusCore

struct EventsTopics: Leaf {
    static let path = ["events", "topics"]
    static let abstract = "List every topic plugins' event types own."
    static let discussion = """
        For each: the payload type (varlink IDL), audience (owner, admin, capability:NAME), whether
        it is logged, and its publisher.
        """

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        if context.options.json {
            context.output.reply(try context.json(BusContract.Topics()))
        } else {
            let rows = try context.call(BusContract.Topics()).topics.compactMap { (try? JSONValue(encoding: $0))?.objectValue }
            print(Output.table(rows, order: ["topic", "version", "audience", "durable", "publisher", "payload"]), terminator: "")
        }
        return ExitCode.ok
    }
}
