import Contracts
import Bus
import PluginKit
import Storage

/// `io.appd.Export`: a user's data export (GDPR articles 15 and 20). The daemon serves it, not
/// a plugin: it gathers every running plugin's rows of the user (`Plugin.exportUserData`) and
/// the user's events from the log, and a plugin never calls another.
enum ExportInterface {
    static let idl = """
        # A user's data export: everything appd holds about one user, as one JSON document
        # (each plugin's rows of the user, and the user's events from the log). Nothing of
        # another user, and no secret: no password hash, token or token digest.
        interface io.appd.Export

        # The signed-in user's own data (over the socket and HTTP).
        method Mine() -> (export: object)

        # Admin: the data of the account with this email (audited).
        method User(email: string) -> (export: object)

        # No account has this email.
        error UnknownAccount (email: string)
        """

    struct ExportReply: Codable, Sendable { var export: JSONValue }

    struct Mine: Command {
        static let method = "io.appd.Export.Mine"
        static let requirements: [Requirement] = [.session]
        typealias Reply = ExportReply
    }
    struct User: Command {
        static let method = "io.appd.Export.User"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = ExportReply
        var email: String
    }
    struct UnknownAccount: WireError {
        let email: String
        var wireName: String { "io.appd.Export.UnknownAccount" }
        var wireParameters: [String: JSONValue] { ["email": .string(email)] }
        var description: String { "no account has the email '\(email)'" }
    }

    static func install(on dispatcher: VarlinkDispatcher, host: PluginHost, eventLog: EventLog) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Mine.self) { _, envelope in
            guard let user = envelope.caller.principal?.userID else { throw UnknownAccount(email: "") }
            return .init(export: try await document(user, host: host, eventLog: eventLog))
        }
        try bus.register(User.self) { command, envelope in
            let found = try await bus.send(LookupAccount(email: command.email), causedBy: envelope)
            guard let user = found.userID else { throw UnknownAccount(email: command.email) }
            envelope.logger.notice("user data exported", metadata: ["user.id": user])
            return .init(export: try await document(user, host: host, eventLog: eventLog))
        }
    }

    /// `{format, exportedAt, userId, plugins: {name: …}, events: […]}`.
    static func document(_ user: String, host: PluginHost, eventLog: EventLog) async throws -> JSONValue {
        var events: [JSONValue] = []
        var after: Int64 = 0
        while true {
            let page = try await eventLog.events(about: user, after: after, limit: 500)
            for event in page {
                after = event.sequence ?? after
                var object: [String: JSONValue] = ["topic": .string(event.topic), "time": .string(event.timestamp.rfc3339)]
                if let sequence = event.sequence { object["seq"] = .int(sequence) }
                object["payload"] = event.redacted ? .null : ((try? event.json()) ?? .null)
                events.append(.object(object))
            }
            if page.count < 500 { break }
        }
        return [
            "format": 1, "exportedAt": .string(WallTime.now().rfc3339), "userId": .string(user),
            "plugins": .object(try await host.exportUserData(user)), "events": .array(events),
        ]
    }
}
