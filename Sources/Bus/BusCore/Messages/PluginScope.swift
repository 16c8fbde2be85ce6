// SPDX-License-Identifier: Apache-2.0
/// What an external plugin may do over appd's socket once its connection presented the
/// plugin's credential (`io.appd.Bus.AuthenticatePlugin`): the events it may publish and
/// subscribe to and the methods it may call — what its manifest declares, nothing more.
public struct PluginScope: Sendable, Equatable {
    public let plugin: String
    public let publishes: [String]
    public let subscribes: [String]
    public let calls: Set<String>
    /// Named capabilities (`auth.resetTokens`): capability-only events and methods.
    public let capabilities: Set<String>

    public init(plugin: String, publishes: [String], subscribes: [String], calls: Set<String>, capabilities: Set<String> = []) {
        self.plugin = plugin
        self.publishes = publishes
        self.subscribes = subscribes
        self.calls = calls
        self.capabilities = capabilities
    }

    /// Methods every plugin connection may call: the handshake, ping, introspection, and the
    /// event methods (whose topics are checked against the scope by the handlers).
    public static let alwaysAllowed: Set<String> = [
        "io.appd.Bus.AuthenticatePlugin", "io.appd.Bus.Publish", "io.appd.Bus.Subscribe", "io.appd.Daemon.Ping",
        "org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription",
    ]

    public func mayCall(_ method: String) -> Bool { Self.alwaysAllowed.contains(method) || calls.contains(method) }

    public func mayPublish(_ topic: String) -> Bool {
        publishes.contains { (try? TopicFilter($0))?.matches(topic) == true }
    }

    /// A requested pattern is allowed when it is one of the declared ones, or a plain topic a
    /// declared pattern matches.
    public func maySubscribe(_ pattern: String) -> Bool {
        subscribes.contains(pattern) || (!pattern.contains("*") && !pattern.contains(">") && subscribes.contains { (try? TopicFilter($0))?.matches(pattern) == true })
    }
}

/// Resolves a plugin credential to its scope (the external plugin host implements it).
public protocol PluginCredentials: Sendable {
    func scope(forToken token: String) -> PluginScope?
}
