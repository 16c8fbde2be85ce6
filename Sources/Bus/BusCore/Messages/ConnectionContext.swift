// SPDX-License-Identifier: Apache-2.0

/// State that belongs to one client connection and outlives single calls: the session token
/// attached by `io.appd.Auth.Authenticate` (as Redis `AUTH` does), or a plugin's scope.
public final class ConnectionContext: Sendable {
    public let id: Int
    public let peer: PeerCredentials?
    private let token = Locked<SessionToken?>(nil)
    private let scope = Locked<PluginScope?>(nil)

    /// The plugin whose own socket (`VarlinkServer.openDoor`) the connection came in on: it
    /// is that plugin's from the start and can be no one else's.
    public let boundPlugin: String?

    public init(id: Int, peer: PeerCredentials?, plugin: PluginScope? = nil) {
        self.id = id
        self.peer = peer
        self.boundPlugin = plugin?.plugin
        scope.withLock { $0 = plugin }
    }

    /// The session token every later call on this connection carries to the gates.
    public var sessionToken: SessionToken? {
        get { token.withLock { $0 } }
        set { token.withLock { $0 = newValue } }
    }

    /// Set when an external plugin presented its credential: the connection is then limited
    /// to what the plugin's manifest declares.
    public var pluginScope: PluginScope? {
        get { scope.withLock { $0 } }
        set { scope.withLock { $0 = newValue } }
    }
}
