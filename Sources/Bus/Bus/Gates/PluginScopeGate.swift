// SPDX-License-Identifier: Apache-2.0
/// Holds a connection that presented a plugin credential to its manifest: any method outside
/// it is denied, whatever the peer's uid (plugins run as appd's user, which would otherwise
/// make them admins). Calls carry the plugin's name for the audit trail.
public struct PluginScopeGate: Gate {
    public init() {}
    public var name: String { "scope" }
    public var position: GatePosition { .scope }
    public var deciding: Deciding { .always }

    public func covers(_ requirement: Requirement) -> Bool {
        if case .capability = requirement { return true }
        return false
    }

    public func applies(to envelope: Envelope) -> Bool {
        envelope.caller.connection?.pluginScope != nil || envelope.requirements.contains { if case .capability = $0 { true } else { false } }
    }

    /// Decided from the connection's scope, always without waiting.
    public func decide(_ envelope: inout Envelope) -> GateDecision {
        let needed = envelope.requirements.compactMap { requirement -> String? in
            if case .capability(let name) = requirement { return name }
            return nil
        }
        guard let scope = envelope.caller.connection?.pluginScope else {
            // Only the daemon's own in-process calls (no socket peer) hold every capability.
            if let name = needed.first,
                envelope.caller.peer != nil || envelope.caller.connection != nil || envelope.caller.principal != nil || envelope.caller.remoteAddress != nil
            {
                return .deny(
                    PermissionDenied(reason: "\(envelope.name) needs the '\(name)' capability: only a plugin whose plugin.json lists it under \"capabilities\" may call it"))
            }
            return .pass
        }
        if let missing = needed.first(where: { !scope.capabilities.contains($0) }) {
            return .deny(PermissionDenied(reason: "plugin '\(scope.plugin)' lacks the '\(missing)' capability; declare it under \"capabilities\" in its plugin.json"))
        }
        guard scope.mayCall(envelope.name) else {
            return .deny(PermissionDenied(reason: "plugin '\(scope.plugin)' may not call \(envelope.name); declare it under \"calls\" in its plugin.json"))
        }
        envelope.caller.plugin = scope.plugin
        return .pass
    }

    public func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        try await handleByDeciding(envelope, next: next)
    }
}
