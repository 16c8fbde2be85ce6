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
    static let alwaysAllowed: Set<String> = [
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

/// Holds a connection that presented a plugin credential to its manifest: any method outside
/// it is denied, whatever the peer's uid (plugins run as appd's user, which would otherwise
/// make them admins). Calls carry the plugin's name for the audit trail.
public struct PluginScopeGate: Gate {
    public init() {}
    public var name: String { "scope" }

    public func covers(_ requirement: Requirement) -> Bool {
        if case .capability = requirement { return true }
        return false
    }

    public func applies(to envelope: Envelope) -> Bool {
        envelope.caller.connection?.pluginScope != nil || envelope.requirements.contains { if case .capability = $0 { true } else { false } }
    }

    public func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        let needed = envelope.requirements.compactMap { requirement -> String? in
            if case .capability(let name) = requirement { return name }
            return nil
        }
        guard let scope = envelope.caller.connection?.pluginScope else {
            // Only the daemon's own in-process calls (no socket peer) hold every capability.
            if let name = needed.first,
                envelope.caller.peer != nil || envelope.caller.connection != nil || envelope.caller.principal != nil || envelope.caller.remoteAddress != nil
            {
                throw PermissionDenied(reason: "\(envelope.name) needs the '\(name)' capability: only a plugin whose plugin.json lists it under \"capabilities\" may call it")
            }
            return try await next(envelope)
        }
        if let missing = needed.first(where: { !scope.capabilities.contains($0) }) {
            throw PermissionDenied(reason: "plugin '\(scope.plugin)' lacks the '\(missing)' capability; declare it under \"capabilities\" in its plugin.json")
        }
        guard scope.mayCall(envelope.name) else {
            throw PermissionDenied(reason: "plugin '\(scope.plugin)' may not call \(envelope.name); declare it under \"calls\" in its plugin.json")
        }
        var envelope = envelope
        envelope.caller.plugin = scope.plugin
        return try await next(envelope)
    }
}
