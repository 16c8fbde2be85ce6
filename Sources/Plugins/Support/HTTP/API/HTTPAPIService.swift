#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem

/// Serves an `HTTPAPI` on a listening socket as one of appd's services; shutting down lets
/// requests in flight finish, ends event streams, and closes every connection.
public final class HTTPAPIService: Service {
    public let api: HTTPAPI
    private let server: HTTPServer
    public let port: UInt16

    /// Takes `listenFD` (bound and listening); the server closes it.
    public init(api: HTTPAPI, listenFD: Int32, logger: Logger) throws(SocketError) {
        self.api = api
        self.port = UInt16(clamping: appd_tcp_port(listenFD))
        self.server = try HTTPServer(name: "appd-http", listenFD: listenFD, limits: api.options.limits, logger: logger) { [api] request, body in
            await api.handle(request, body)
        }
    }

    public var name: String { "http-api" }

    /// Open connections and event streams.
    public var stats: (connections: Int, streams: Int) { server.stats }

    public func run() async throws {
        await server.run()
    }
}
