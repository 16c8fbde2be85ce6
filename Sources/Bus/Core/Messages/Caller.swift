/// The process on the other end of a socket, from `SO_PEERCRED`.
public struct PeerCredentials: Hashable, Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32

    public init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }
}

/// A signed-in user, as resolved by the session gate from persisted state.
public struct Principal: Hashable, Sendable {
    public var userID: String
    public var email: String?
    public var onboarded: Bool
    public var emailVerified: Bool

    public init(userID: String, email: String? = nil, onboarded: Bool = false, emailVerified: Bool = false) {
        self.userID = userID
        self.email = email
        self.onboarded = onboarded
        self.emailVerified = emailVerified
    }
}

/// A bearer token the connection presented; its text never appears in logs.
public struct SessionToken: Hashable, Sendable, CustomStringConvertible {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "<redacted>" }
}

/// Who sent a message: a socket peer, a signed-in user, a plugin, or the daemon itself.
public struct Caller: Sendable, CustomStringConvertible {
    /// Credentials of the socket peer, when the call came over a socket.
    public var peer: PeerCredentials?
    /// The session token attached to the connection (`io.appd.Auth.Authenticate`).
    public var sessionToken: SessionToken?
    /// The user behind the session, filled in by the session gate.
    public var principal: Principal?
    /// The plugin that sent the message, for plugin-to-plugin traffic.
    public var plugin: String?
    /// The client connection the call arrived on, when it came over the socket.
    public var connection: ConnectionContext?
    /// The client's address when the call came over the network (the HTTP API). Such a caller
    /// has no peer credentials and is never the daemon itself, nor an admin.
    public var remoteAddress: String?
    /// The operator console's session the call came from (its id, for the audit line): the
    /// console acts as the admin whose link opened it, with that admin's credentials as `peer`.
    public var console: String?

    public init(
        peer: PeerCredentials? = nil, sessionToken: SessionToken? = nil, principal: Principal? = nil,
        plugin: String? = nil, connection: ConnectionContext? = nil, remoteAddress: String? = nil, console: String? = nil
    ) {
        self.peer = peer
        self.sessionToken = sessionToken
        self.principal = principal
        self.plugin = plugin
        self.connection = connection
        self.remoteAddress = remoteAddress
        self.console = console
    }

    /// The daemon itself (start-up tasks, tests): no peer, no user.
    public static let daemon = Caller()

    /// A plugin acting on its own behalf.
    public static func plugin(_ name: String) -> Caller { Caller(plugin: name) }

    public var description: String {
        var parts: [String] = []
        if let peer { parts.append("uid=\(peer.uid) pid=\(peer.pid)") }
        if let principal { parts.append("user=\(principal.userID)") }
        if let plugin { parts.append("plugin=\(plugin)") }
        if let remoteAddress { parts.append("address=\(remoteAddress)") }
        if let console { parts.append("console=\(console)") }
        return parts.isEmpty ? "daemon" : parts.joined(separator: " ")
    }
}
