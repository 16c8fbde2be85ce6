// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Synchronization

/// The bus's way into one external plugin: the handlers registered for its methods call
/// through here. While the plugin is down, calls fail fast with `PluginUnavailable`.
final class PluginGateway: Sendable {
    let plugin: String
    private let current = Mutex<(pool: PluginConnectionPool?, reason: String)>((nil, "it has not started"))
    private let isAdmin: @Sendable (Caller) -> Bool
    private let callTimeout: Duration
    private let streamIdleTimeout: Duration

    init(plugin: String, callTimeout: Duration, streamIdleTimeout: Duration, isAdmin: @escaping @Sendable (Caller) -> Bool) {
        self.plugin = plugin
        self.callTimeout = callTimeout
        self.streamIdleTimeout = streamIdleTimeout
        self.isAdmin = isAdmin
    }

    func up(_ pool: PluginConnectionPool) { current.withLock { $0 = (pool, "") } }
    func down(_ reason: String) { current.withLock { $0 = (nil, reason) } }

    /// Routes one client call. `injectsCaller`: the method declares `caller: ?Caller`, which
    /// appd fills in; a client that sends one is refused, so it cannot be forged.
    func call(_ method: String, _ parameters: JSONValue, _ envelope: Envelope, injectsCaller: Bool) async throws -> JSONValue {
        let (pool, parameters, timeout) = try prepare(method, parameters, envelope, injectsCaller: injectsCaller)
        return try await pool.call(method, parameters, timeout: timeout)
    }

    /// A call with `more`: each of the plugin's replies is passed on as it arrives; the last is
    /// returned. The manifest's `streamIdleTimeoutSeconds` bounds each wait for the next reply
    /// (the first one too: the bus's deadline covers only starting the stream).
    func stream(_ method: String, _ parameters: JSONValue, _ envelope: Envelope, injectsCaller: Bool, writer: ReplyWriter<JSONValue>) async throws -> JSONValue {
        let (pool, parameters, _) = try prepare(method, parameters, envelope, injectsCaller: injectsCaller)
        return try await pool.stream(method, parameters, timeout: streamIdleTimeout) { reply in try await writer.send(reply) }
    }

    private func prepare(_ method: String, _ parameters: JSONValue, _ envelope: Envelope, injectsCaller: Bool) throws -> (PluginConnectionPool, JSONValue, Duration) {
        var parameters = parameters == .null ? .object([:]) : parameters
        if injectsCaller {
            if let given = parameters["caller"], given != .null {
                throw InvalidParameters(method: method, parameter: "caller", reason: "is filled in by appd; do not send it")
            }
            guard case .object(var fields) = parameters else { throw InvalidParameters(method: method, parameter: "caller", reason: "parameters must be an object") }
            fields["caller"] = Self.callerValue(envelope.caller, admin: isAdmin(envelope.caller))
            parameters = .object(fields)
        }
        let (pool, reason) = current.withLock { $0 }
        guard let pool else { throw DaemonError.pluginUnavailable(plugin: plugin, reason: reason) }
        var timeout = callTimeout
        if let deadline = envelope.deadline { timeout = min(timeout, deadline - ContinuousClock.now) }
        return (pool, parameters, timeout)
    }

    /// `Caller (uid: int, userId: ?string, email: ?string, roles: []string)`.
    static func callerValue(_ caller: Caller, admin: Bool) -> JSONValue {
        var roles: [JSONValue] = []
        if caller.principal != nil { roles.append("user") }
        if admin { roles.append("admin") }
        return [
            // A network (HTTP) caller has no uid: -1.
            "uid": .int(caller.peer.map { Int64($0.uid) } ?? (caller.remoteAddress == nil ? Int64(getuidValue()) : -1)),
            "userId": caller.principal.map { .string($0.userID) } ?? .null,
            "email": caller.principal?.email.map(JSONValue.string) ?? .null, "roles": .array(roles),
        ]
    }
}

#if canImport(Glibc)
import Glibc
#endif
private func getuidValue() -> UInt32 { getuid() }
