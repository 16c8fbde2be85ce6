// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

extension ConsoleInterface {
    /// Serves io.appd.Console: links and sessions of `console`, or ConsoleOff for
    /// every method while there is none.
    /// `base`: where links point (the console's public URL, else its listening address).
    public static func install(on dispatcher: VarlinkDispatcher, console: Console?, base: String?, adminGate: AdminGate) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        let sessions = console?.sessions
        try bus.register(CreateLink.self) { _, envelope in
            guard let sessions, let base else { throw ConsoleError.consoleOff }
            // The admin gate let the caller through; the session acts with its credentials.
            guard let credentials = adminGate.consoleCredentials(of: envelope.caller) else {
                throw PermissionDenied(reason: "a console link is for an admin peer on the socket (the daemon's uid, root, or the admin group)")
            }
            let link = try await sessions.createLink(for: credentials)
            envelope.logger.notice("console link created", metadata: ["peer.uid": "\(credentials.uid)"])
            return Link(url: base + "/console/login?token=" + link.token, expiresAt: link.expiresAt.rfc3339)
        }
        try bus.register(Sessions.self) { _, _ in
            guard let sessions else { throw ConsoleError.consoleOff }
            return SessionList(sessions: try await sessions.list())
        }
        try bus.register(EndSessions.self) { command, _ in
            guard let sessions else { throw ConsoleError.consoleOff }
            return Ended(ended: try await sessions.end(id: command.id))
        }
    }
}
