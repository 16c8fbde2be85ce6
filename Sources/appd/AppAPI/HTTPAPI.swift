// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import HTTP

/// The app-facing HTTP API: every method an app may call, derived from the
/// served IDL with no per-method code — `POST /v1/<interface>/<Method>` with the parameters
/// as a JSON object, through the same `VarlinkDispatcher` (IDL validation, gates, deadline)
/// as the socket; `Authorization: Bearer` plays `Authenticate`; streaming methods answer as
/// server-sent events. Beside them: `/openapi.json`, `/healthz`, `/readyz`, `/metrics`, and
/// the paths the running plugins serve themselves (`pluginRoute`: webhooks, file bytes).
///
/// Admin methods, capability methods, appd's own control interfaces and external plugins'
/// methods their manifest does not mark for HTTP are not routed: 404, as if absent.
public final class HTTPAPI: Sendable {
    /// One readiness check: its name, whether it passes, and what is wrong when not.
    public typealias Readiness = @Sendable () async -> [(check: String, ok: Bool, detail: String)]

    let dispatcher: VarlinkDispatcher
    let options: HTTPAPIOptions
    /// Whether a method (full name) may be routed, beyond the rules every method follows.
    let exposed: @Sendable (String) -> Bool
    let readiness: Readiness
    /// The handler of a path a plugin serves (`/webhooks/<provider>`, `/files/<id>`), if any.
    let pluginRoute: @Sendable (String) -> HTTPServer.Handler?
    /// The OpenAPI path items of what the plugins serve themselves (`PluginHTTPRoute.openAPI`).
    let pluginPaths: [String: JSONValue]
    /// What browsers need to use the paths plugins serve (`PluginHTTPRoute.crossOrigin`).
    let pluginCrossOrigin: CrossOriginNeeds
    /// The refusals the API makes before the bus, as the session feature names them.
    let refusals: HTTPRefusals
    let logger: Logger
    /// The client networks' buckets for the abuse-prone methods (shared across instances by `SharedRateLimits`).
    public let limiter: RateLimiter
    let clientStreams: ClientStreams
    private let openAPICache = Mutex<(key: [String], bytes: [UInt8])?>(nil)
    private let routeTable = HTTPRoutes()
    private let responses = ResponseCounters()

    public init(
        dispatcher: VarlinkDispatcher, options: HTTPAPIOptions, exposed: @escaping @Sendable (String) -> Bool, readiness: @escaping Readiness,
        pluginRoute: @escaping @Sendable (String) -> HTTPServer.Handler? = { _ in nil }, pluginPaths: [String: JSONValue] = [:],
        pluginCrossOrigin: CrossOriginNeeds = CrossOriginNeeds(), refusals: HTTPRefusals, logger: Logger
    ) {
        self.refusals = refusals
        self.dispatcher = dispatcher
        self.options = options
        self.exposed = exposed
        self.readiness = readiness
        self.pluginRoute = pluginRoute
        self.pluginPaths = pluginPaths
        self.pluginCrossOrigin = pluginCrossOrigin
        self.logger = logger
        self.limiter = RateLimiter(perMinute: options.rateLimitPerMinute, trackedClients: options.rateLimitTrackedClients)
        self.clientStreams = ClientStreams(limit: options.maxStreamsPerClient, serverLimit: options.limits.maxStreams)
    }

    /// Whether `method` (full name) is reachable over HTTP.
    public func routes(_ method: String) -> Bool { routed(method) != nil }

    /// What the bus knows of `method` when it is reachable over HTTP; nil when not. Decided by
    /// what the method declares, never by its name: one that requires `admin`, a capability,
    /// or the `socket` (it acts on the connection, or is the operator's) is not routed, and
    /// `exposed` (an external plugin's manifest) has the last word.
    func routed(_ method: String) -> HTTPRoutes.Route? {
        routeTable.route(method, dispatcher: dispatcher, resolve: httpRoute)
    }

    /// The route a call's request path names (`/v1/<interface>/<Method>`), if it is routed.
    func routed(path: String) -> HTTPRoutes.Route? {
        routeTable.route(path: path, method: Self.methodName, dispatcher: dispatcher, resolve: httpRoute)
    }

    private func httpRoute(_ route: VarlinkRoute) -> HTTPRoutes.Route? {
        guard let info = route.info else { return nil }
        let kept = info.requirements.contains { requirement in
            switch requirement {
            case .admin, .capability, .socket: true
            default: false
            }
        }
        guard !kept, exposed(route.name) else { return nil }
        return HTTPRoutes.Route(
            route: route, info: info, taggable: ConditionalRequest.mayTag(route.method, in: route.interface),
            rateLimited: info.requirements.contains(.clientRateLimited) || options.rateLimitedMethods.contains(route.name))
    }

    /// Handles one request on the server's loop thread (`HTTPServer.Dispatch`): answered there
    /// when nothing in it waits (a refusal, `/healthz`, a call `VarlinkDispatcher.answerNow`
    /// answers), or handed back as work for a task.
    public func handling(_ request: HTTPServerRequest, _ body: [UInt8]) -> HTTPHandling {
        let started = ContinuousClock.now
        let client = ClientAddress.of(request, trustedProxies: options.trustedProxies)
        let (route, routed) = self.route(request, body, client: client)
        // What the response's decoration needs of the request, taken once: work answered later
        // keeps this, not a copy of the whole request (its headers, query and target).
        let served = Served(
            route: route, method: request.method, path: route == "other" ? "-" : request.path, origin: request.headers["origin"], client: client,
            started: started)
        switch routed {
        case .now(let response): return .now(finish(response, served))
        case .later(let work): return .later { [self] in finish(await work(), served) }
        case .responding(let work):
            return .responding { [self] responder in
                responder.decorate { [self] response, streamed in decorate(&response, streamed: streamed, served) }
                responder.onEnd { [self] streamed in
                    if streamed { logEnd(served) }
                }
                await work(responder)
            }
        }
    }

    /// A request as its response's decoration and its access line see it (`handling`).
    struct Served: Sendable {
        let route: String
        let method: String
        /// The path the access log shows ("-" for a route of no interest): never the query (a
        /// client may put a secret there).
        let path: String
        /// The request's `Origin`, for its CORS headers.
        let origin: String?
        let client: String
        let started: ContinuousClock.Instant

        /// What the access log says of the request, never a header's value; built only when the
        /// level logs it (its keys written in order: the metadata is built by appending).
        func accessLine(status: Int) -> LogMetadata {
            ["client": client, "method": method, "ms": HTTPAPI.milliseconds(since: started), "path": path, "status": String(status)]
        }
    }

    /// Decorates, counts and logs a response.
    private func finish(_ routed: HTTPResponse, _ served: Served) -> HTTPResponse {
        var response = routed
        decorate(&response, streamed: response.stream != nil, served)
        guard let stream = response.stream else { return response }
        response.stream = { [self] responder in
            await stream(responder)
            logEnd(served)
        }
        return response
    }

    /// What every response gets as it starts: CORS headers, its count, its access line. A
    /// stream is logged twice: when it starts ('ms' to its first event) and when it ends ('ms'
    /// for its whole life, `logEnd`), so a long stream is visible while it runs.
    private func decorate(_ response: inout HTTPResponse, streamed: Bool, _ served: Served) {
        CORSPolicy(allowed: options.allowedOrigins, needs: pluginCrossOrigin).decorate(&response, origin: served.origin)
        responses.counter(route: served.route, status: response.status).add()
        logger.info(streamed ? "http stream started" : "http", metadata: served.accessLine(status: response.status))
    }

    private func logEnd(_ served: Served) {
        logger.info("http stream ended", metadata: served.accessLine(status: 200))
    }

    /// Milliseconds since `start`, to the microsecond.
    public static func milliseconds(since start: ContinuousClock.Instant) -> String {
        let microseconds = max(0, Int64(((ContinuousClock.now - start).inSeconds * 1_000_000).rounded()))
        let fraction = microseconds % 1000
        var text = String(microseconds / 1000)
        text.append(".")
        text.append(Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8(fraction / 100))))
        text.append(Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))))
        text.append(Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8(fraction % 10))))
        return text
    }

    private func route(_ request: HTTPServerRequest, _ body: [UInt8], client: String) -> (String, HTTPHandling) {
        // A browser's CORS preflight; an OPTIONS that is not one goes to the plugin serving the
        // path, if any (tus clients ask a server's capabilities so).
        if request.method == "OPTIONS" && (request.headers["access-control-request-method"] != nil || pluginRoute(request.path) == nil) {
            return ("preflight", .now(CORSPolicy(allowed: options.allowedOrigins, needs: pluginCrossOrigin).preflight(request)))
        }
        switch request.path {
        case "/healthz": return ("healthz", .now(get(request) ?? HTTPResponse(status: 200, body: ["status": "ok"])))
        case "/readyz":
            if let refusal = get(request) { return ("readyz", .now(refusal)) }
            return ("readyz", .later { [self] in await ready() })
        case "/metrics":
            if let refusal = get(request) { return ("metrics", .now(refusal)) }
            return ("metrics", .later { [self] in await metrics() })
        case "/openapi.json": return ("openapi", .now(get(request) ?? openAPI()))
        default: break
        }
        if request.path.hasPrefix("/webhooks/") || !request.path.hasPrefix("/v1/") {
            // Labelled by the first segment only: the routes are the plugins' few, not the paths.
            let label = String(request.path.dropFirst().prefix { $0 != "/" })
            guard let handler = pluginRoute(request.path) else {
                if label == "webhooks" { return ("webhooks", .now(APIErrorStatus.refusal(404, "NotFound", ["reason": "no such webhook"]))) }
                return ("other", .now(APIErrorStatus.refusal(404, "NotFound", ["reason": "see /openapi.json for the routes"])))
            }
            return (label, .later { await handler(request, body) })
        }
        if request.path.hasPrefix("/v1/") { return ("call", call(request, body, client: client)) }
        return ("other", .now(APIErrorStatus.refusal(404, "NotFound", ["reason": "see /openapi.json for the routes"])))
    }

    /// nil for GET and HEAD (the server sends a HEAD the GET's head, without the body); a 405
    /// otherwise.
    private func get(_ request: HTTPServerRequest) -> HTTPResponse? {
        guard request.method != "GET" && request.method != "HEAD" else { return nil }
        return HTTPResponse(status: 405, body: ["error": "MethodNotAllowed", "parameters": ["allow": "GET, HEAD"]], headers: [("Allow", "GET, HEAD")])
    }

    private func ready() async -> HTTPResponse {
        let checks = await readiness()
        let ok = checks.allSatisfy(\.ok)
        let body: JSONValue = [
            "status": .string(ok ? "ready" : "not ready"),
            "checks": .object(Dictionary(uniqueKeysWithValues: checks.map { ($0.check, JSONValue.string($0.ok ? "ok" : $0.detail)) })),
        ]
        return HTTPResponse(status: ok ? 200 : 503, body: body)
    }

    private func metrics() async -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(await Metrics.shared.render().utf8))
    }

    private func openAPI() -> HTTPResponse {
        let names = dispatcher.interfaceNames
        let bytes = openAPICache.withLock { cache -> [UInt8] in
            if let cache, cache.key == names { return cache.bytes }
            let document = OpenAPIDocument(api: self).render()
            let bytes = JSONWriter.bytes(document)
            cache = (names, bytes)
            return bytes
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")], body: bytes)
    }
}
