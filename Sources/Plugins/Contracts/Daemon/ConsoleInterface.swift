// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Console`: sign-in to the operator console in the browser (`--console-listen`).
/// An admin on the socket asks for a one-time link; opening it gives the browser a session
/// that acts as that admin, through the same commands, gates and audit lines as appctl.
public enum ConsoleInterface {
    public static let idl = """
        # The operator console in the browser: one-time sign-in links and the sessions they
        # opened. Admin only.
        interface io.appd.Console

        # A browser session of the console.
        type Session (
          # Names the session (not the cookie: that never leaves the browser and appd).
          id: string,
          # The uid of the admin whose link opened it; the console acts as that admin.
          uid: int,
          createdAt: string,
          lastSeenAt: string,
          # When it ends unless used before: idle timeout, capped by the absolute lifetime.
          expiresAt: string,
          # The browser's address.
          address: string
        )

        # A one-time link that signs a browser in to the console as the calling admin. It
        # works once, within its lifetime (consoleLinkSeconds).
        method CreateLink() -> (url: string, expiresAt: string)

        # The console's open sessions.
        method Sessions() -> (sessions: []Session)

        # Ends one session (by id), or every session when no id is given; the browser is
        # signed out at its next request. Also forgets links not yet opened when ending all.
        method EndSessions(id: ?string) -> (ended: int)

        # The console is off: start appd with --console-listen (a loopback address).
        # category: invalid
        error ConsoleOff ()

        # No open session has this id.
        # category: invalid
        error UnknownSession (id: string)

        # Too many links are waiting to be opened; wait for one to expire or end the sessions.
        # category: invalid
        error TooManyLinks (limit: int)
        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [CreateLink.self, Sessions.self, EndSessions.self]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = ConsoleError
    /// The interface's name.
    public static var name: String { Errors.interface }

    public struct Session: Codable, Sendable, Equatable {
        public var id: String
        public var uid: Int64
        public var createdAt: String
        public var lastSeenAt: String
        public var expiresAt: String
        public var address: String
        public init(id: String, uid: Int64, createdAt: String, lastSeenAt: String, expiresAt: String, address: String) {
            self.id = id
            self.uid = uid
            self.createdAt = createdAt
            self.lastSeenAt = lastSeenAt
            self.expiresAt = expiresAt
            self.address = address
        }
    }

    public struct CreateLink: Command {
        public static let method = "io.appd.Console.CreateLink"
        public static let requirements: [Requirement] = [.admin]
        public typealias Reply = Link
        public init() {}
    }

    public struct Link: Codable, Sendable {
        public var url: String
        public var expiresAt: String
        public init(url: String, expiresAt: String) {
            self.url = url
            self.expiresAt = expiresAt
        }
    }

    public struct Sessions: Command {
        public static let method = "io.appd.Console.Sessions"
        public static let requirements: [Requirement] = [.admin]
        public typealias Reply = SessionList
        public init() {}
    }

    public struct SessionList: Codable, Sendable {
        public var sessions: [Session]
        public init(sessions: [Session]) {
            self.sessions = sessions
        }
    }

    public struct EndSessions: Command {
        public static let method = "io.appd.Console.EndSessions"
        public static let requirements: [Requirement] = [.admin]
        public typealias Reply = Ended
        public var id: String?
        public init(id: String? = nil) {
            self.id = id
        }
    }

    public struct Ended: Codable, Sendable {
        public var ended: Int
        public init(ended: Int) {
            self.ended = ended
        }
    }
}

/// The typed errors of `io.appd.Console`.
public enum ConsoleError: InterfaceError {
    public static let interface = "io.appd.Console"
    case consoleOff
    case unknownSession(id: String)
    case tooManyLinks(limit: Int)

    public var description: String {
        switch self {
        case .consoleOff: "the console is off: start appd with --console-listen 127.0.0.1:<port>"
        case .unknownSession(let id): "no console session has the id '\(id)'"
        case .tooManyLinks(let limit): "\(limit) console links are waiting to be opened; wait for one to expire or end the sessions"
        }
    }
}
