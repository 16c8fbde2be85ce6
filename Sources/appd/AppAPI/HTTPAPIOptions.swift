// SPDX-License-Identifier: Apache-2.0
import HTTP
/// How the app-facing HTTP API behaves; every limit has a default and a config key.
public struct HTTPAPIOptions: Sendable {
    /// The connection limits (head and body size, connections, keep-alive idle time, the
    /// time a request may take to arrive).
    public var limits = HTTPServerLimits()
    /// A call's deadline, from its arrival to its reply (504 past it). Streams have none.
    public var callTimeout: Duration = .seconds(30)
    /// Addresses of reverse proxies whose `X-Forwarded-For` is believed; from anyone else the
    /// header is ignored and the peer's own address is the client's.
    public var trustedProxies: Set<String> = []
    /// Origins a browser may call from (`https://app.example.com`, or `*`); none by default.
    public var allowedOrigins: Set<String> = []
    /// Calls of the unauthenticated, abuse-prone methods (sign-up, sign-ins, password reset:
    /// those whose requirements say `clientRateLimited`) allowed per client address and minute;
    /// 0 turns the limit off.
    public var rateLimitPerMinute = 30
    /// Methods the limit applies to beyond those that declare `clientRateLimited`.
    public var rateLimitedMethods: Set<String> = []
    /// Client addresses tracked by the rate limiter at once (the oldest is forgotten first).
    public var rateLimitTrackedClients = 100_000
    /// Event streams one client address (an IPv6 /64) holds open at once; one more is 429.
    public var maxStreamsPerClient = 16
    /// A comment line keeps idle event streams (and the proxies in between) from timing out.
    public var keepAliveInterval: Duration = .seconds(15)
    /// How long a streaming call may take to give its first reply before the event stream starts
    /// anyway (an error before then is a plain error response with its status).
    public var firstReplyGrace: Duration = .milliseconds(250)
    public init() {}
}
