// SPDX-License-Identifier: Apache-2.0
import BusCore
/// Bounds of an `HTTPServer`; every one is configurable and none is unbounded.
public struct HTTPServerLimits: Sendable {
    /// The request head (request line and headers) must fit in this.
    public var maxHeadBytes = 16 * 1024
    /// A request body must fit in this (413 otherwise).
    public var maxBodyBytes = 1024 * 1024
    /// Paths whose requests may carry a larger body than `maxBodyBytes` (a file upload), each
    /// with its own bound: the longest matching prefix decides.
    public var largeBodies: [LargeBody] = []
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

    /// A path prefix whose requests' bodies may reach `maxBytes`.
    public struct LargeBody: Sendable, Equatable {
        public var pathPrefix: String
        public var maxBytes: Int
        public init(pathPrefix: String, maxBytes: Int) {
            self.pathPrefix = pathPrefix
            self.maxBytes = maxBytes
        }
    }

    /// The bound of a body sent to `path`.
    public func maxBodyBytes(forPath path: String) -> Int {
        guard !largeBodies.isEmpty else { return maxBodyBytes }
        return largeBodies.filter { path.hasPrefix($0.pathPrefix) }.max { $0.pathPrefix.utf8.count < $1.pathPrefix.utf8.count }?.maxBytes ?? maxBodyBytes
    }

    /// The largest body any path may get: what a connection may buffer.
    public var largestBodyBytes: Int { largeBodies.reduce(maxBodyBytes) { max($0, $1.maxBytes) } }
}
