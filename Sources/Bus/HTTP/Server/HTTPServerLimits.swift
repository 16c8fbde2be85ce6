// SPDX-License-Identifier: Apache-2.0
import BusCore
/// Bounds of an `HTTPServer`; every one is configurable and none is unbounded.
public struct HTTPServerLimits: Sendable {
    /// The request head (request line and headers) must fit in this.
    public var maxHeadBytes = 16 * 1024
    /// A request body must fit in this (413 otherwise).
    public var maxBodyBytes = 1024 * 1024
    /// Open connections; one more is answered 503 and closed.
    public var maxConnections = 1024
    /// Connections reading their request (or idle between requests) at once; one more
    /// displaces the one reading longest, so slow clients (slowloris) can never keep a real
    /// request out.
    public var maxReading = 512
    /// Requests being handled at once; one more is answered 503.
    public var maxHandling = 256
    /// Streamed responses (server-sent events) open at once; one more is answered 503.
    public var maxStreams = 256
    /// The whole request (head and body) must arrive within this from its first byte.
    public var requestTimeout: Duration = .seconds(10)
    /// An idle keep-alive connection is closed after this.
    public var keepAliveTimeout: Duration = .seconds(75)
    /// A response must make progress (the client reads) within this.
    public var writeTimeout: Duration = .seconds(10)
    /// Unsent bytes of a streamed response above which its writer waits for the client.
    public var streamBufferBytes = 64 * 1024
    /// How long a connection whose request was refused before it was read whole keeps reading
    /// (and dropping) what the client still sends, so the client gets the answer, not a reset.
    public var lingerTimeout: Duration = .seconds(2)
    /// How long `run` waits, when cancelled, for requests being handled.
    public var drainTimeout: Duration = .seconds(5)
    public init() {}
}
