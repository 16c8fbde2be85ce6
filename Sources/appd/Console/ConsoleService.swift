// SPDX-License-Identifier: Apache-2.0
import Bus
import CSystem
import HTTP

/// Serves the console on its listening socket as one of appd's services.
public final class ConsoleService: Service {
    public let console: Console
    private let server: HTTPServer
    /// Where it listens, with the port it got ("127.0.0.1:8090").
    public let address: String

    /// Takes `listenFD` (bound and listening on `host`); the server closes it.
    public init(console: Console, host: String, listenFD: Int32, limits: HTTPServerLimits, logger: Logger) throws(SocketError) {
        self.console = console
        self.address = HTTPListenAddress(host: host, port: UInt16(clamping: appd_tcp_port(listenFD))).description
        self.server = try HTTPServer(name: "appd-console", listenFD: listenFD, limits: limits, logger: logger) { [console] request, body in
            console.handling(request, body)
        }
    }

    public var name: String { "console" }

    /// Serves, and samples the metrics for the page's history meanwhile; both end together.
    public func run() async throws {
        let (server, history) = (self.server, console.metricsHistory)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await server.run() }
            group.addTask {
                while !Task.isCancelled {
                    history.record()
                    try? await Task.sleep(for: ConsoleMetricsHistory.interval)
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
