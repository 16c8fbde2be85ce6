// SPDX-License-Identifier: Apache-2.0
import Bus
import Console
import Contracts
import HTTP
import TestSupport
import Testing

/// The console's HTTP routes, driven as the server drives them: sign-in by link, the cookie,
/// CSRF, bearer tokens refused, the allow-list, the audit trail, the headers on everything.
@Suite(.cleansUp) struct ConsoleRoutesTests {
    let console: Console
    let dispatcher: VarlinkDispatcher
    let trail = LogTrail(capacity: 50, next: InMemoryLogHandler())
    let adminGate: AdminGate

    init() async throws {
        adminGate = AdminGate(adminGroup: nil, audit: Logger(label: "appd.audit", handler: trail))
        let bus = EventBus(gates: [adminGate])
        dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        let sessions = try await ConsoleSessions.open(options: ConsoleOptions(), database: try await ConsoleSessionsTests.database().0)
        console = Console(
            options: ConsoleOptions(), sessions: sessions, dispatcher: dispatcher, trail: trail, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        try ConsoleInterface.install(on: dispatcher, console: console, base: "http://127.0.0.1:1", adminGate: adminGate)
    }

    func get(_ target: String, _ headers: HTTPHeaderFields = [:]) async -> HTTPResponse {
        var request = HTTPServerRequest(method: "GET", target: target, headers: headers)
        request.peerAddress = "127.0.0.1"
        return await console.handle(request, [])
    }

    func post(_ target: String, _ body: JSONValue = [:], _ headers: HTTPHeaderFields = [:]) async -> HTTPResponse {
        var request = HTTPServerRequest(method: "POST", target: target, headers: headers)
        request.peerAddress = "127.0.0.1"
        return await console.handle(request, JSONWriter.bytes(body))
    }

    /// A link from io.appd.Console.CreateLink, as a root peer on the socket asks for it.
    func link() async throws -> String {
        let reply = try await dispatcher.bus.send(ConsoleInterface.CreateLink(), as: Caller(peer: PeerCredentials(uid: 0, gid: 0, pid: 1)))
        #expect(reply.url.hasPrefix("http://127.0.0.1:1/console/login?token="))
        return String(reply.url.dropFirst("http://127.0.0.1:1".count))
    }

    /// Signs in; the cookie header and the page's CSRF token.
    func signIn() async throws -> (cookie: String, csrf: String) {
        let response = await get(try await link())
        let setCookie = try #require(response.header("Set-Cookie"))
        let cookie = String(try #require(setCookie.split(separator: ";").first))
        let page = String(decoding: (await get("/console/", ["cookie": cookie])).body, as: UTF8.self)
        let marker = "name=\"appd-csrf\" content=\""
        let start = try #require(page.firstRange(of: marker)).upperBound
        return (cookie, String(page[start...].prefix { $0 != "\"" }))
    }

    @Test func aLinkSignsInOnceWithAStrictCookie() async throws {
        let target = try await link()
        var look = HTTPServerRequest(method: "HEAD", target: target)
        look.peerAddress = "127.0.0.1"
        let head = await console.handle(look, [])
        #expect(head.status == 200 && head.header("Set-Cookie") == nil, "a HEAD spends nothing")
        let first = await get(target)
        #expect(first.status == 303 && first.header("Location") == "/console/")
        let cookie = try #require(first.header("Set-Cookie"))
        #expect(cookie.hasPrefix("appd_console=") && cookie.contains("; Path=/console") && cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict"))
        #expect(!cookie.contains("Secure"), "plain http on loopback: no Secure (the console behind TLS sets it)")
        let again = await get(target)
        #expect(again.status == 401 && again.header("Set-Cookie") == nil)
    }

    @Test func withoutASessionNothingButTheSignedOutPage() async throws {
        for path in ["/console/", "/console/console.js", "/console/console.css"] {
            let response = await get(path)
            #expect(response.status == 401 && !String(decoding: response.body, as: UTF8.self).contains("<script"), "\(path)")
        }
        #expect(await get("/console/api/metrics").status == 401)
        #expect(await post("/console/api/call/io.appd.Console.Sessions").status == 401)
        #expect(await get("/console/login").status == 400)
    }

    @Test func aBearerTokenIsRefusedEvenBesideAValidCookie() async throws {
        let (cookie, csrf) = try await signIn()
        #expect(await get("/console/", ["cookie": cookie]).status == 200)
        #expect(await get("/console/", ["cookie": cookie, "authorization": "Bearer abc"]).status == 401)
        #expect(await post("/console/api/call/io.appd.Console.Sessions", [:], ["cookie": cookie, "x-appd-csrf": csrf, "authorization": "Bearer abc"]).status == 401)
    }

    @Test func statechangingRequestsNeedTheCSRFToken() async throws {
        let (cookie, csrf) = try await signIn()
        let none = await post("/console/api/call/io.appd.Console.Sessions", [:], ["cookie": cookie])
        #expect(none.status == 403)
        #expect(await post("/console/api/call/io.appd.Console.Sessions", [:], ["cookie": cookie, "x-appd-csrf": csrf + "x"]).status == 403)
        #expect(await post("/console/api/call/io.appd.Console.Sessions", [:], ["cookie": cookie, "x-appd-csrf": csrf, "sec-fetch-site": "cross-site"]).status == 403)
        let ok = await post("/console/api/call/io.appd.Console.Sessions", [:], ["cookie": cookie, "x-appd-csrf": csrf, "sec-fetch-site": "same-origin"])
        #expect(ok.status == 200)
        guard case .array(let sessions)? = try JSONParser.parse(ok.body)["sessions"] else { Issue.record("no sessions in the reply"); return }
        #expect(sessions.count == 1)
    }

    @Test func onlyTheListedMethodsAndAsTheAdmin() async throws {
        let (cookie, csrf) = try await signIn()
        let headers: HTTPHeaderFields = ["cookie": cookie, "x-appd-csrf": csrf]
        #expect(await post("/console/api/call/io.appd.Console.CreateLink", [:], headers).status == 404, "a console session makes no links")
        #expect(await post("/console/api/call/io.appd.Daemon.Shutdown", [:], headers).status == 404)
        #expect(await post("/console/api/call/io.appd.Console.EndSessions", [:], headers).status == 404)
        #expect(await post("/console/api/call/io.appd.Console.Sessions", .string("x"), headers).status == 400)
        // The admin gate audited the call as the console's session, as the link's admin.
        _ = await post("/console/api/call/io.appd.Console.Sessions", [:], headers)
        guard case .array(let lines)? = try JSONParser.parse((await get("/console/api/audit", ["cookie": cookie])).body)["lines"] else {
            Issue.record("no audit lines")
            return
        }
        let audited = lines.contains { line in
            let metadata = line["metadata"]?.objectValue ?? [:]
            return metadata["method"] == "io.appd.Console.Sessions" && metadata["console.session"] != nil && metadata["peer.uid"] == "0"
        }
        #expect(audited, "\(lines)")
    }

    @Test func everyResponseForbidsFramingAndInlineScript() async throws {
        let (cookie, _) = try await signIn()
        for response in [await get("/console/"), await get("/console/", ["cookie": cookie]), await get("/console/console.js", ["cookie": cookie]), await get(try await link())] {
            let csp = response.header("Content-Security-Policy") ?? ""
            #expect(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe"))
            #expect(response.header("X-Frame-Options") == "DENY" && response.header("Referrer-Policy") == "no-referrer")
        }
        let page = String(decoding: (await get("/console/", ["cookie": cookie])).body, as: UTF8.self)
        #expect(!page.contains("<script>") && !page.contains("style=") && !page.contains(" on"), "no inline script, style or handler")
    }

    @Test func signingOutEndsTheSession() async throws {
        let (cookie, csrf) = try await signIn()
        let out = await post("/console/api/logout", [:], ["cookie": cookie, "x-appd-csrf": csrf])
        #expect(out.status == 200 && out.header("Set-Cookie")?.contains("Max-Age=0") == true)
        #expect(await get("/console/", ["cookie": cookie]).status == 401)
    }

    @Test func behindTLSTheLinkIsHttpsAndTheCookieSecure() async throws {
        var options = ConsoleOptions()
        options.publicURL = "https://console.example.com/"
        let bus = EventBus(gates: [AdminGate(adminGroup: nil)])
        let tls = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        let sessions = try await ConsoleSessions.open(options: options, database: try await ConsoleSessionsTests.database().0)
        let behind = Console(options: options, sessions: sessions, dispatcher: tls, trail: nil, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        try ConsoleInterface.install(on: tls, console: behind, base: options.base(listeningOn: "127.0.0.1:1"), adminGate: AdminGate(adminGroup: nil))
        let link = try await bus.send(ConsoleInterface.CreateLink(), as: Caller(peer: PeerCredentials(uid: 0, gid: 0, pid: 1)))
        #expect(link.url.hasPrefix("https://console.example.com/console/login?token="))
        var request = HTTPServerRequest(method: "GET", target: String(link.url.dropFirst("https://console.example.com".count)))
        request.peerAddress = "127.0.0.1"
        let response = await behind.handle(request, [])
        #expect(response.status == 303 && response.header("Set-Cookie")?.hasSuffix("; Secure") == true)
    }

    @Test func withoutAConsoleTheInterfaceSaysItIsOff() async throws {
        let bus = EventBus(gates: [AdminGate(adminGroup: nil)])
        let off = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        try ConsoleInterface.install(on: off, console: nil, base: nil, adminGate: AdminGate(adminGroup: nil))
        await #expect(throws: ConsoleError.consoleOff) {
            _ = try await bus.send(ConsoleInterface.CreateLink(), as: Caller(peer: PeerCredentials(uid: 0, gid: 0, pid: 1)))
        }
    }

    @Test func aNonAdminGetsNoLink() async throws {
        await #expect(throws: PermissionDenied.self) {
            _ = try await dispatcher.bus.send(ConsoleInterface.CreateLink(), as: Caller(peer: PeerCredentials(uid: 4242, gid: 4242, pid: 1)))
        }
    }
}
