// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import HTTP

/// Serves an `HTTPAPI` on a listening socket as one of appd's services; shutting down lets
/// requests in flight finish, ends event streams, and closes every connection.
public final class HTTPAPIService: Service {
    public let api: HTTPAPI
    private let server: HTTPServer
    public let port: UInt16
    /// Where it listens, with the port it got ("127.0.0.1:8080"; the kernel's port for 0).
    public let address: String

    /// Takes `listenFD` (bound and listening on `host`); the server closes it.
    public init(api: HTTPAPI, host: String, listenFD: Int32, logger: Logger) throws(SocketError) {
        self.api = api
        self.port = UInt16(clamping: appd_tcp_port(listenFD))
        self.address = HTTPListenAddress(host: host, port: port).description
        self.server = try HTTPServer(name: "appd-http", listenFD: listenFD, limits: api.options.limits, logger: logger) { [api] request, body in
            api.handling(request, body)
        }
    }

    public var name: String { "http-api" }

    /// Open connections and event streams.
    public var stats: (connections: Int, streams: Int) { server.stats }

    public func run() async throws {
        await server.run()
    }
}
