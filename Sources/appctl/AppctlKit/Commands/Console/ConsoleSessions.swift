// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct ConsoleSessions: Leaf {
    static let path = ["console", "sessions"]
    static let abstract = "List the console's browser sessions (admin)."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let sessions = try context.call(ConsoleInterface.Sessions()).sessions
        if context.options.json {
            context.output.reply(["sessions": (try? JSONValue(encoding: sessions)) ?? .array([])])
            return ExitCode.ok
        }
        if sessions.isEmpty { StandardError.write("no console sessions\n") }
        for session in sessions {
            print(
                "\(session.id)  uid \(session.uid)  from \(session.address)  since \(session.createdAt)  last seen \(session.lastSeenAt)  ends \(session.expiresAt)"
                    .escapingControlCharacters())
        }
        return ExitCode.ok
    }
}
