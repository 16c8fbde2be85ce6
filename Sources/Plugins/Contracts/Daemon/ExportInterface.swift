// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Export`: a user's data export (GDPR articles 15 and 20). The daemon serves it, not
/// a plugin: it gathers every running plugin's rows of the user (`Plugin.exportUserData`) and
/// the user's events from the log, and a plugin never calls another.
public enum ExportInterface {
    public static let idl = """
        # A user's data export: everything appd holds about one user, as one JSON document
        # (each plugin's rows of the user, and the user's events from the log). Nothing of
        # another user, and no secret: no password hash, token or token digest.
        interface io.appd.Export

        # The signed-in user's own data (over the socket and HTTP).
        method Mine() -> (export: object)

        # Admin: the data of the account with this email (audited).
        method User(email: string) -> (export: object)

        # No account has this email.
        # category: notFound
        error UnknownAccount (email: string)
        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [Mine.self, User.self]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = ExportError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }

    public struct ExportReply: Codable, Sendable {
        public var export: JSONValue
        public init(export: JSONValue) {
            self.export = export
        }
    }

    public struct Mine: Command {
        public static let method = "io.appd.Export.Mine"
        public static let readsOnly = true
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = ExportReply
        public init() {}
    }
    public struct User: Command {
        public static let method = "io.appd.Export.User"
        public static let requirements: [Requirement] = [.admin]
        public typealias Reply = ExportReply
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }

}

/// The typed errors of `io.appd.Export`.
public enum ExportError: InterfaceError {
    public static let interface = "io.appd.Export"
    case unknownAccount(email: String)

    public var description: String {
        switch self {
        case .unknownAccount(let email): "no account has the email '\(email)'"
        }
    }
}
