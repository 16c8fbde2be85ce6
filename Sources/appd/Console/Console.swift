// SPDX-License-Identifier: Apache-2.0
import AppAPI
import Bus
import HTTP

/// The operator console: a page for admins in the browser, served on a listener of its own
/// (`--console-listen`), apart from the app API. Static HTML, CSS and JavaScript embedded in
/// the binary (ConsoleAssets); everything it shows or changes goes through the dispatcher, as
/// the admin whose one-time link opened the session — the same commands, gates and audit lines
/// as appctl.
///
/// - `GET /console/login?token=…` spends a link from `io.appd.Console.CreateLink` and sets the
///   session cookie (HttpOnly, SameSite=Strict, Path=/console, Secure behind TLS).
/// - Every other route needs that cookie; an `Authorization` header (an app user's bearer
///   token) is refused before anything else, and the app API never reads cookies.
/// - State-changing requests (POST) carry the session's CSRF token in `X-Appd-Csrf`.
/// - Every response forbids framing and inline script (Content-Security-Policy).
public final class Console: Sendable {
    public let sessions: ConsoleSessions
    let dispatcher: VarlinkDispatcher
    let trail: LogTrail?
    let options: ConsoleOptions
    let streams: ClientStreams
    let logger: Logger
    /// The metrics page's last minute.
    let metricsHistory = ConsoleMetricsHistory()

    /// The name of the session cookie.
    static let cookieName = "appd_console"

    /// `sessions`: the links and sessions in the database (`ConsoleSessions.open`).
    public init(options: ConsoleOptions, sessions: ConsoleSessions, dispatcher: VarlinkDispatcher, trail: LogTrail?, logger: Logger) {
        self.options = options
        self.sessions = sessions
        self.dispatcher = dispatcher
        self.trail = trail
        self.streams = ClientStreams(limit: options.maxStreams)
        self.logger = logger
    }

    /// The console's `HTTPServer` dispatch: its event stream answers through the responder (a
    /// refusal before the first event is a plain response); every other request in a task.
    public func handling(_ request: HTTPServerRequest, _ body: [UInt8]) -> HTTPHandling {
        guard request.method == "GET", request.path == "/console/api/events" else { return .later { [self] in await handle(request, body) } }
        let started = ContinuousClock.now
        return .responding { [self] responder in
            responder.decorate { [self] response, _ in
                ConsoleHeaders.decorate(&response)
                log(request, status: response.status, since: started)
            }
            switch await admit(request) {
            case .refused(let response): responder.respond(response)
            case .admitted(let session, _):
                await events(request, caller: Caller(peer: session.credentials, console: session.id), session: session.id, into: responder)
            }
        }
    }

    /// Handles one request whose response is whole.
    public func handle(_ request: HTTPServerRequest, _ body: [UInt8]) async -> HTTPResponse {
        let started = ContinuousClock.now
        var response = await route(request, body)
        ConsoleHeaders.decorate(&response)
        log(request, status: response.status, since: started)
        return response
    }

    /// Never the query: the login link's token is in it. The pages poll (GET) every few
    /// seconds: those lines are debug; what changes something is info (and audited).
    private func log(_ request: HTTPServerRequest, status: Int, since started: ContinuousClock.Instant) {
        logger.log(
            request.method == "GET" ? .debug : .info, "console",
            metadata: ["method": request.method, "path": request.path, "status": String(status), "client": request.peerAddress, "ms": HTTPAPI.milliseconds(since: started)])
    }

    private func route(_ request: HTTPServerRequest, _ body: [UInt8]) async -> HTTPResponse {
        if request.headers["authorization"] != nil { return Self.bearerRefusal }
        if request.path == "/" || request.path == "/console" { return ConsoleHeaders.redirect(to: "/console/") }
        if request.path == "/console/login" {
            // HEAD is safe (RFC 9110): a client that only looks (a link checker) spends nothing.
            if request.method == "HEAD" { return HTTPResponse(status: 200, headers: [("Content-Type", "text/html; charset=utf-8")], body: []) }
            guard request.method == "GET" else { return ConsoleHeaders.methodNotAllowed("GET") }
            return await login(request)
        }
        switch await admit(request) {
        case .refused(let response): return response
        case .admitted(let session, let cookie): return await api(request, body, session: session, cookie: cookie)
        }
    }

    static var bearerRefusal: HTTPResponse {
        ConsoleHeaders.refusal(401, "the console does not take bearer tokens; sign in with a link from 'appctl console'")
    }

    enum Admission {
        case admitted(ConsoleSessions.Session, cookie: String)
        case refused(HTTPResponse)
    }

    /// Whether a request past the login may go on: a bearer token never (the console signs in
    /// with its link only); a request under /console/ needs the session cookie, and a POST the
    /// page's CSRF token too.
    private func admit(_ request: HTTPServerRequest) async -> Admission {
        if request.headers["authorization"] != nil { return .refused(Self.bearerRefusal) }
        guard request.path.hasPrefix("/console/") else { return .refused(ConsoleHeaders.refusal(404, "not found")) }
        var found: (cookie: String, session: ConsoleSessions.Session)?
        if let cookie = ConsoleHeaders.cookie(Self.cookieName, in: request) {
            do {
                found = try await sessions.session(cookie: cookie).map { (cookie, $0) }
            } catch {
                return .refused(ConsoleHeaders.refusal(503, "cannot check the session: \(error)"))
            }
        }
        guard let (cookie, session) = found else {
            return .refused(
                request.path.hasPrefix("/console/api/")
                    ? ConsoleHeaders.refusal(401, "not signed in: open a new link from 'appctl console'")
                    : ConsoleHeaders.signedOut())
        }
        if request.method == "POST" {
            // A cross-site request never carries the cookie (SameSite=Strict); the token is a
            // second lock, and a browser that says the request is cross-site is refused outright.
            if let site = request.headers["sec-fetch-site"], site != "same-origin", site != "none" {
                return .refused(ConsoleHeaders.refusal(403, "cross-site requests are refused"))
            }
            guard let token = request.headers["x-appd-csrf"], ConsoleHeaders.same(token, session.csrf) else {
                return .refused(ConsoleHeaders.refusal(403, "the request lacks the page's CSRF token (X-Appd-Csrf): reload the console"))
            }
        }
        return .admitted(session, cookie: cookie)
    }

    private func login(_ request: HTTPServerRequest) async -> HTTPResponse {
        guard let token = request.query["token"], !token.isEmpty, token.utf8.count <= 128 else {
            return ConsoleHeaders.refusal(400, "the link has no token: copy the whole link 'appctl console' printed")
        }
        let redeemed: (cookie: String, session: ConsoleSessions.Session)?
        do {
            redeemed = try await sessions.redeem(token, address: request.peerAddress)
        } catch {
            return ConsoleHeaders.refusal(503, "cannot make a session: \(error)")
        }
        guard let (cookie, session) = redeemed else {
            return ConsoleHeaders.refusal(401, "this link was used already or has expired: run 'appctl console' for a new one")
        }
        logger.notice("console session opened", metadata: ["console.session": session.id, "peer.uid": "\(session.credentials.uid)", "client": request.peerAddress])
        var response = ConsoleHeaders.redirect(to: "/console/")
        response.headers.append(("Set-Cookie", ConsoleHeaders.sessionCookie(cookie, options: options)))
        return response
    }
}
