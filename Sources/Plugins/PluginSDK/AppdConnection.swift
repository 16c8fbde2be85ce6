// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Serving

/// appd's socket as the plugin reaches it: every call authenticated with the credential appd
/// gave this process (`APPD_SOCKET`, `APPD_PLUGIN_TOKEN`), so it may call and publish what its
/// manifest declares and nothing more. The varlink client blocks: calls run on a small pool
/// of their own, never on the thread serving appd's calls to the plugin.
public final class AppdConnection: Sendable {
    public let socket: String
    private let token: String
    private let timeout: Duration
    private let pool: BlockingPool

    /// The connection described by the environment appd starts the plugin with.
    public init(timeout: Duration = .seconds(5), threads: Int = 4) throws(AppdCallFailed) {
        guard let socket = getenv("APPD_SOCKET").map({ String(cString: $0) }), let token = getenv("APPD_PLUGIN_TOKEN").map({ String(cString: $0) }) else {
            throw AppdCallFailed(
                method: "io.appd.Bus.AuthenticatePlugin", error: "NotStartedByAppd",
                parameters: [
                    "reason": "APPD_SOCKET or APPD_PLUGIN_TOKEN is not set: appd sets both when it starts the plugin"
                ])
        }
        self.socket = socket
        self.token = token
        self.timeout = timeout
        self.pool = BlockingPool(name: "appd-calls", threads: threads, queueLimit: 256)
    }

    /// Calls `method` on appd as this plugin; its reply's parameters, or `AppdCallFailed`
    /// with the error appd answered (a gate's refusal, say).
    public func call(_ method: String, _ parameters: JSONValue = [:]) async throws -> JSONValue {
        let (socket, token, timeout) = (self.socket, self.token, self.timeout)
        return try await pool.run {
            let client = try VarlinkClient(path: socket, timeout: timeout)
            let auth = try client.call("io.appd.Bus.AuthenticatePlugin", ["token": .string(token)])
            if let error = auth.error { throw AppdCallFailed(method: "io.appd.Bus.AuthenticatePlugin", error: error, parameters: auth.parameters) }
            let reply = try client.call(method, parameters)
            if let error = reply.error { throw AppdCallFailed(method: method, error: error, parameters: reply.parameters) }
            return reply.parameters
        }
    }

    /// Publishes an event on appd's bus (a topic the manifest's `publishes` allows).
    public func publish(topic: String, payload: JSONValue = [:]) async throws {
        _ = try await call("io.appd.Bus.Publish", ["topic": .string(topic), "payload": payload])
    }
}

/// appd answered a call with an error, or could not be reached as this plugin. A handler that
/// lets it through answers its own caller with that error, name and parameters as appd gave
/// them (a publish the manifest does not allow is `org.varlink.service.PermissionDenied` with
/// its reason, not an InternalError).
public struct AppdCallFailed: WireError, Equatable {
    public let method: String
    /// The varlink error name (`io.appd.Bus.PermissionDenied`, …).
    public let error: String
    public let parameters: JSONValue

    public var description: String { "\(method): \(error) \(parameters)" }
    public var wireName: String { error }
    public var wireParameters: [String: JSONValue] { parameters.objectValue ?? [:] }
}
