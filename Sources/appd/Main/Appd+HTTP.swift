// SPDX-License-Identifier: Apache-2.0
import Auth
import Bus
import CSystem
import Contracts
import HTTP
import Payments
import PluginKit
import Storage
import AppAPI
import ExternalPlugins

/// Step 8b of the composition root: the app-facing HTTP API (`--http-listen`), its
/// readiness checks and the gauges `/metrics` reads at scrape time.
extension Appd {
    /// Binds the HTTP API's address (a bind failure stops appd, as the socket's does) and builds
    /// the service; nil when `httpListen` is not set.
    static func httpAPI(
        _ config: AppdConfig, dispatcher: VarlinkDispatcher, host: PluginHost, external: ExternalPluginHost, plugins: [any Plugin], context: PluginContext, eventLog: EventLog,
        logger: Logger
    ) async throws -> HTTPAPIService? {
        guard let listen = config.httpListen else { return nil }
        let (address, fd) = try bind(
            listen, key: "httpListen", backlog: config.listenBacklog, logger: logger,
            warning: "the HTTP API listens on a non-loopback address without TLS; put a TLS-terminating proxy in front")
        // What the running plugins serve (auth: /webhooks/apple; payments: /webhooks/<provider>;
        // files: /files), with the larger bodies some of them take (an upload).
        let routes = await host.httpRoutes()
        var options = config.http
        options.limits.largeBodies += routes.compactMap { route in
            guard let bytes = route.maxBodyBytes, case .prefix(let prefix) = route.match else { return nil }
            return HTTPServerLimits.LargeBody(pathPrefix: prefix, maxBytes: bytes)
        }
        let api = HTTPAPI(
            dispatcher: dispatcher, options: options,
            // External plugins' methods only when their manifest marks them; built-in ones unless
            // what they require keeps them off the network (admin, a capability, the socket).
            exposed: { method in external.httpExposed(method) ?? true },
            readiness: {
                var checks: [(check: String, ok: Bool, detail: String)] = []
                do {
                    _ = try await withTimeout(.seconds(2), timeoutError: { StorageError(kind: .busy, message: "no answer within 2 s") }) { try await eventLog.lastSequence() }
                    checks.append(("database", true, ""))
                } catch {
                    checks.append(("database", false, "\(error)"))
                }
                let down = await host.statuses().filter { $0.state != .running && !config.disabledPlugins.contains($0.name) }
                checks.append(("plugins", down.isEmpty, down.map { "\($0.name) is \($0.state.rawValue)" }.joined(separator: "; ")))
                return checks
            },
            pluginRoute: { path in PluginHTTPRoute.resolve(path, in: routes)?.handler },
            pluginPaths: routes.reduce(into: [:]) { paths, route in paths.merge(route.openAPI) { first, _ in first } },
            pluginCrossOrigin: routes.reduce(CrossOriginNeeds()) { $0.adding($1.crossOrigin) },
            // Sessions are Auth's: a header that is not a bearer token, and a client address over
            // the sign-in methods' limit, are refused as its errors.
            refusals: HTTPRefusals(notBearer: AuthError.unauthenticated, clientRateLimited: { AuthError.tooManyAttempts(retryAfterSeconds: $0) }),
            logger: Logger(label: "appd.http"))
        do {
            return try HTTPAPIService(api: api, host: address.host, listenFD: fd, logger: Logger(label: "appd.http"))
        } catch {
            throw StartFailure("cannot start the HTTP API: \(error)")
        }
    }

    /// Binds a TCP listener of `key` (a bind failure stops appd: exit 78, a configuration
    /// error), logging `warning` when it is not on loopback.
    static func bind(_ listen: String, key: String, backlog: Int, logger: Logger, warning: String) throws -> (HTTPListenAddress, Int32) {
        let address: HTTPListenAddress
        let fd: Int32
        do {
            address = try HTTPListenAddress(listen)
            fd = try address.listen(backlog: ListenBacklog.resolve(backlog))
        } catch {
            throw StartFailure("\(key): \(error)", exitCode: 78)
        }
        if !address.isLoopback { logger.warning(warning, metadata: ["address": "\(address)"]) }
        return (address, fd)
    }

    /// Gauges read at scrape time: connections by transport, the event log's head, each
    /// durable consumer's lag and the heap in use.
    static func registerGauges(varlink: VarlinkServer, http: HTTPAPIService?, eventLog: EventLog) {
        Metrics.shared.register(
            Metrics.Collector(
                name: "appd_heap_in_use_bytes",
                help: "Bytes the heap holds for live allocations (resident memory also keeps up to 8 MiB freed since, for reuse)."
            ) { [([], Double(appd_heap_in_use()))] })
        Metrics.shared.register(
            Metrics.Collector(name: "appd_connections", help: "Open client connections by transport.", labelNames: ["transport"]) {
                var samples: [([String], Double)] = [(["varlink"], Double(varlink.stats.connections))]
                if let http { samples.append((["http"], Double(http.stats.connections))) }
                return samples
            })
        Metrics.shared.register(
            Metrics.Collector(name: "appd_http_streams", help: "Open event streams over HTTP.") {
                http.map { [([], Double($0.stats.streams))] } ?? []
            })
        Metrics.shared.register(
            Metrics.Collector(name: "appd_event_log_head", help: "The durable event log's last sequence number.") {
                guard let head = try? await eventLog.lastSequence() else { return [] }
                return [([], Double(head))]
            })
        Metrics.shared.register(
            Metrics.Collector(name: "appd_consumer_lag", help: "Events in the log a durable consumer has not processed yet.", labelNames: ["consumer"]) {
                guard let lag = try? await eventLog.consumerLag() else { return [] }
                return lag.consumers.map { ([$0.name], Double($0.lag)) }
            })
    }
}
