// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct ConsoleEnd: Leaf {
    static let path = ["console", "end"]
    static let abstract = "End a console session (by id), or all of them with --all (admin)."
    @Argument("id", "The session's id (appctl console sessions lists them).") var id: String?
    @Flag("--all", "End every session and forget the links not yet opened.") var all: Bool

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard (id == nil) == all else { throw .usage("console end needs a session id or --all", command: Self.command) }
        let ended = try context.call(ConsoleInterface.EndSessions(id: id)).ended
        if context.options.json { context.output.reply(["ended": .int(Int64(ended))]) } else { print("ended \(ended) session\(ended == 1 ? "" : "s")") }
        return ExitCode.ok
    }
}
