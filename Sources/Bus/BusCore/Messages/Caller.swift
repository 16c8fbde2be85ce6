// SPDX-License-Identifier: Apache-2.0
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
///
/// Small on purpose (32 bytes, from 128): every envelope holds one, and an envelope is copied
/// into each gate's and handler's async frame, which an open stream holds for as long as it is
/// open (measured: a Subscribe stream's heap 12.4 -> 11.2 KB; with the principal kept inline,
/// 72 bytes, no gain). The peer and the connection (what a socket call has) are stored inline;
/// the other fields are kept together in one shared box, copied only when a value that shares
/// it is changed (copy on write).
public struct Caller: Sendable, CustomStringConvertible {
    /// Credentials of the socket peer, when the call came over a socket.
    public var peer: PeerCredentials?
    /// The client connection the call arrived on, when it came over the socket.
    public var connection: ConnectionContext?
    private var extra: Extra?

    /// The session token attached to the connection (`io.appd.Auth.Authenticate`).
    public var sessionToken: SessionToken? {
        get { extra?.sessionToken }
        set { change(to: newValue) { $0.sessionToken = newValue } }
    }
    /// The user behind the session, filled in by the session gate.
    public var principal: Principal? {
        get { extra?.principal }
        set { change(to: newValue) { $0.principal = newValue } }
    }
    /// The plugin that sent the message, for plugin-to-plugin traffic.
    public var plugin: String? {
        get { extra?.plugin }
        set { change(to: newValue) { $0.plugin = newValue } }
    }
    /// The client's address when the call came over the network (the HTTP API). Such a caller
    /// has no peer credentials and is never the daemon itself, nor an admin.
    public var remoteAddress: String? {
        get { extra?.remoteAddress }
        set { change(to: newValue) { $0.remoteAddress = newValue } }
    }
    /// The operator console's session the call came from (its id, for the audit line): the
    /// console acts as the admin whose link opened it, with that admin's credentials as `peer`.
    public var console: String? {
        get { extra?.console }
        set { change(to: newValue) { $0.console = newValue } }
    }

    public init(
        peer: PeerCredentials? = nil, sessionToken: SessionToken? = nil, principal: Principal? = nil,
        plugin: String? = nil, connection: ConnectionContext? = nil, remoteAddress: String? = nil, console: String? = nil
    ) {
        self.peer = peer
        self.connection = connection
        let boxed = sessionToken != nil || principal != nil || plugin != nil || remoteAddress != nil || console != nil
        self.extra = boxed ? Extra(sessionToken: sessionToken, principal: principal, plugin: plugin, remoteAddress: remoteAddress, console: console) : nil
    }

    /// Sets one boxed field: the box is made when the first field is set, and copied first
    /// when another caller value shares it.
    private mutating func change<Value>(to value: Value?, _ set: (Extra) -> Void) {
        if extra == nil {
            guard value != nil else { return }
            extra = Extra()
        } else if !isKnownUniquelyReferenced(&extra!) {
            extra = extra!.copy()
        }
        set(extra!)
    }

    /// The fields most callers do not have. Mutable only through `Caller.change`, which
    /// changes a box no other value refers to.
    private final class Extra: @unchecked Sendable {  // safe: copy on write; changed only while uniquely referenced
        var sessionToken: SessionToken?
        var principal: Principal?
        var plugin: String?
        var remoteAddress: String?
        var console: String?

        init(sessionToken: SessionToken? = nil, principal: Principal? = nil, plugin: String? = nil, remoteAddress: String? = nil, console: String? = nil) {
            self.sessionToken = sessionToken
            self.principal = principal
            self.plugin = plugin
            self.remoteAddress = remoteAddress
            self.console = console
        }

        func copy() -> Extra {
            Extra(sessionToken: sessionToken, principal: principal, plugin: plugin, remoteAddress: remoteAddress, console: console)
        }
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
