// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Glibc
@testable import AppAPI
@testable import HTTP
import Synchronization
import Testing
import TestSupport

/// An `HTTPAPI` over a bus with one small interface, on a real `HTTPServer`.
struct APIFixture {
    static let idl = """
        # Notes for the tests.
        interface io.example.Notes

        type Note (id: int, text: string)

        # Adds a note.
        method Add(text: string, tag: ?string) -> (note: Note)

        # Admin only.
        method Wipe() -> ()

        # Streams 'count' notes.
        method Watch(count: int) -> (note: Note)

        # Refuses.
        method Refuse() -> ()

        # Streams nothing until its client leaves.
        method Quiet() -> (note: Note)

        # Acts on the caller's connection: only over the socket.
        method Attach() -> ()

        # Never waits: says whether it ran in a task.
        method Quick(text: string) -> (text: string, inTask: bool)

        error Crowded (retryAfterSeconds: int)

        # category: unavailable
        error Closed (retryAfterSeconds: int)
        """

    let server: RunningServer
    let dispatcher: VarlinkDispatcher
    let api: HTTPAPI
    /// The API's log (the access log among it).
    let log = InMemoryLogHandler()
    /// Replies `Watch` wrote straight to the client (`ReplyWriter.sendDirectly`).
    let direct = DirectCount()

    final class DirectCount: Sendable {
        let value = Atomic<Int>(0)
    }

    init(options: HTTPAPIOptions = HTTPAPIOptions()) throws {
        let bus = EventBus(gates: [AdminGate(adminGroup: nil)])
        let direct = self.direct
        dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        try dispatcher.register(try VarlinkInterface(parsing: Self.idl))
        try bus.registerRaw(method: "io.example.Notes.Add", requirements: []) { envelope, parameters in
            // The text says who called: the client address the API saw.
            ["note": ["id": 1, "text": .string((parameters["text"]?.stringValue ?? "") + "@" + (envelope.caller.remoteAddress ?? "-"))]]
        }
        try bus.registerRaw(method: "io.example.Notes.Wipe", requirements: [.admin]) { _, _ in [:] }
        try bus.registerRaw(method: "io.example.Notes.Refuse", requirements: []) { _, _ in throw Crowded() }
        try bus.registerRawStream(method: "io.example.Notes.Watch", requirements: []) { _, parameters, writer in
            guard case .int(let count)? = parameters["count"], count > 0 else { throw Crowded() }
            // As a subscription feed does: straight to the client when it is caught up, else
            // through the stream. The first 20 go through the stream; then every 20th note
            // waits (as between events) until the client has caught up, up to half a second.
            for n in 1..<count {
                let note: JSONValue = ["note": ["id": .int(n), "text": "n"]]
                let attempts = n <= 20 ? 0 : n % 20 == 0 ? 500 : 1
                var sent = false
                for attempt in 0..<attempts {
                    sent = writer.sendDirectly { (note, JSONWriter.bytes(note)) }
                    if sent || attempt == attempts - 1 { break }
                    try await Task.sleep(for: .milliseconds(1))
                }
                if sent { direct.value.add(1, ordering: .relaxed) } else { try await writer.send(note) }
            }
            return ["note": ["id": .int(count), "text": "last"]]
        }
        try bus.registerRaw(method: "io.example.Notes.Attach", requirements: [.socket]) { _, _ in [:] }
        try bus.registerRawStream(method: "io.example.Notes.Quiet", requirements: []) { _, _, _ in
            try await Task.sleep(for: .seconds(3600))
            return [:]
        }
        let api = HTTPAPI(
            dispatcher: dispatcher, options: options, exposed: { _ in true }, readiness: { [("database", true, "")] },
            refusals: .auth, logger: Logger(label: "t", handler: log))
        try bus.answer(Quick.self) { command, _ in Quick.Reply(text: command.text, inTask: withUnsafeCurrentTask { $0 != nil }) }
        self.api = api
        server = try RunningServer(limits: options.limits) { request, body in api.handling(request, body) }
    }

    struct Quick: Command {
        static let method = "io.example.Notes.Quick"
        struct Reply: Codable, Sendable {
            var text: String
            var inTask: Bool
        }
        var text: String
    }

    struct Crowded: WireError {
        var wireName: String { "io.example.Notes.Crowded" }
        var wireParameters: [String: JSONValue] { ["retryAfterSeconds": 7] }
        var description: String { "crowded" }
    }

    /// One request with `Connection: close`; the raw response.
    func request(_ method: String, _ path: String, body: String = "", headers: [String: String] = [:]) async throws -> String {
        var head = "\(method) \(path) HTTP/1.1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return try await server.exchange(head + "\r\n" + body)
    }

    static func status(_ response: String) -> Int { Int(response.split(separator: " ").dropFirst().first ?? "") ?? 0 }
    static func body(_ response: String) -> String { response.components(after: "\r\n\r\n") }
}

extension String {
    func components(after marker: String) -> String {
        guard let found = firstRange(of: marker) else { return "" }
        return String(self[found.upperBound...])
    }
}

@Suite struct HTTPAPITests {
    @Test func aMethodIsCalledWithItsJSONBodyAndAnswersItsReply() async throws {
        let f = try APIFixture()
        let response = try await f.request("POST", "/v1/io.example.Notes/Add", body: #"{"text":"hi"}"#, headers: ["Content-Type": "application/json"])
        #expect(APIFixture.status(response) == 200, "\(response)")
        #expect(APIFixture.body(response) == #"{"note":{"id":1,"text":"hi@127.0.0.1"}}"#, "\(response)")
        await f.server.stop()
    }

    @Test func aCallThatNeverWaitsIsAnsweredOnTheServersLoopAndLoggedLikeAnyOther() async throws {
        let f = try APIFixture()
        let quick = try await f.request("POST", "/v1/io.example.Notes/Quick", body: #"{"text":"hi"}"#)
        #expect(APIFixture.status(quick) == 200 && APIFixture.body(quick) == #"{"inTask":false,"text":"hi"}"#, "\(quick)")
        let bad = try await f.request("POST", "/v1/io.example.Notes/Quick", body: #"{"text":1}"#)
        #expect(APIFixture.status(bad) == 400 && bad.contains(#""parameter":"text""#), "\(bad)")
        #expect(f.log.records.contains { $0.message == "http" && $0.metadata["path"] == "/v1/io.example.Notes/Quick" && $0.metadata["status"] == "200" })
        // The dispatch says so: answered now, or work for a task (a handler that may wait).
        func handling(_ path: String) -> HTTPHandling {
            let request = HTTPServerRequest(method: "POST", target: path, headers: ["content-length": "2"], contentLength: 2)
            return f.api.handling(request, Array("{}".utf8))
        }
        guard case .now = handling("/v1/io.example.Notes/Quick") else { Issue.record("Quick was not answered now"); return }
        guard case .responding = handling("/v1/io.example.Notes/Add") else { Issue.record("Add was answered now"); return }
        await f.server.stop()
    }

    @Test func validationAndRoutingErrorsHaveTheirStatus() async throws {
        let f = try APIFixture()
        let wrongType = try await f.request("POST", "/v1/io.example.Notes/Add", body: #"{"text":5}"#)
        #expect(APIFixture.status(wrongType) == 400 && wrongType.contains(#""parameter":"text""#), "\(wrongType)")
        let admin = try await f.request("POST", "/v1/io.example.Notes/Wipe", body: "{}")
        #expect(APIFixture.status(admin) == 404 && admin.contains("MethodNotFound"), "an admin method is not routed: \(admin)")
        #expect(APIFixture.status(try await f.request("POST", "/v1/io.example.Notes/Nope", body: "{}")) == 404)
        #expect(APIFixture.status(try await f.request("POST", "/v1/io.example.Notes", body: "{}")) == 404)
        #expect(APIFixture.status(try await f.request("GET", "/v1/io.example.Notes/Add")) == 405)
        #expect(APIFixture.status(try await f.request("POST", "/v1/io.example.Notes/Add", body: "[]")) == 400)
        #expect(APIFixture.status(try await f.request("POST", "/v1/io.example.Notes/Add", body: "{", headers: ["Content-Type": "application/json"])) == 400)
        #expect(APIFixture.status(try await f.request("POST", "/v1/io.example.Notes/Add", body: "a=b", headers: ["Content-Type": "text/plain"])) == 415)
        let refused = try await f.request("POST", "/v1/io.example.Notes/Refuse", body: "{}")
        #expect(refused.contains(#"{"error":"io.example.Notes.Crowded","parameters":{"retryAfterSeconds":7}}"#), "\(refused)")
        #expect(APIFixture.status(try await f.request("POST", "/v1/io.example.Notes/Add", body: "{}", headers: ["Authorization": "Basic x"])) == 401)
        #expect(APIFixture.status(try await f.request("GET", "/nothing")) == 404)
        await f.server.stop()
    }

    @Test func aStreamingMethodAnswersServerSentEventsAndAnEarlyErrorAsAStatus() async throws {
        // A grace long enough that a loaded machine cannot start the stream before the early
        // error arrives (the test waits for the outcome, not for 250 ms).
        var options = HTTPAPIOptions()
        options.firstReplyGrace = .seconds(30)
        let f = try APIFixture(options: options)
        let streamed = try await f.request("POST", "/v1/io.example.Notes/Watch", body: #"{"count":3}"#, headers: ["Accept": "text/event-stream"])
        #expect(streamed.hasPrefix("HTTP/1.1 200 OK\r\n") && streamed.contains("Content-Type: text/event-stream\r\n"), "\(streamed)")
        #expect(streamed.contains("event: reply\ndata: {\"note\":{\"id\":1,\"text\":\"n\"}}\n\n"), "\(streamed)")
        #expect(streamed.contains("event: reply\ndata: {\"note\":{\"id\":3,\"text\":\"last\"}}\n\n"), "\(streamed)")
        #expect(streamed.hasSuffix("0\r\n\r\n"), "the stream ends: \(streamed)")
        let early = try await f.request("POST", "/v1/io.example.Notes/Watch", body: #"{"count":0}"#, headers: ["Accept": "text/event-stream"])
        #expect(APIFixture.status(early) == 400 && early.contains("Retry-After: 7") == false && early.contains("Crowded"), "\(early)")
        let notAccepted = try await f.request("POST", "/v1/io.example.Notes/Watch", body: #"{"count":3}"#)
        #expect(APIFixture.status(notAccepted) == 406, "\(notAccepted)")
        await f.server.stop()
    }

    /// A stream's replies go straight from the producer to the socket while the writer waits,
    /// and through the hand-off while it is busy: the events arrive whole and in order.
    @Test func aStreamWrittenPartlyStraightToTheSocketKeepsItsOrder() async throws {
        var options = HTTPAPIOptions()
        options.firstReplyGrace = .milliseconds(1)
        let f = try APIFixture(options: options)
        let count = 1000
        let streamed = try await f.request("POST", "/v1/io.example.Notes/Watch", body: "{\"count\":\(count)}", headers: ["Accept": "text/event-stream"])
        #expect(streamed.hasSuffix("0\r\n\r\n"), "the stream ends")
        // Chunk framing aside, every event is one `data:` line with its note.
        let ids = streamed.split(separator: "\n").filter { $0.hasPrefix("data: ") }.compactMap { line -> Int? in
            guard let value = try? JSONParser.parse(Array(line.dropFirst(6).utf8)), case .int(let id)? = value["note"]?["id"] else { return nil }
            return Int(id)
        }
        #expect(ids == Array(1...count), "\(ids.count) events, first out of order at \(String(describing: zip(ids, 1...count).first { $0 != $1 }))")
        let direct = f.direct.value.load(ordering: .relaxed)
        #expect(direct > 0, "some went straight to the socket (the first 20 through the hand-off)")
        await f.server.stop()
    }

    /// Routes are kept by the path that named them: every spelling of a method's path reaches
    /// it, and an interface that stops being served is not routed from a path kept before.
    @Test func aRouteKeptByItsPathFollowsTheServedInterfaces() async throws {
        let f = try APIFixture()
        for path in ["/v1/io.example.Notes/Add", "/v1/io.example/Notes.Add"] {
            let added = try await f.request("POST", path, body: #"{"text":"kept"}"#)
            #expect(APIFixture.status(added) == 200, "\(path): \(added)")
        }
        let unknown = try await f.request("POST", "/v1/io.example.Notes/Nope", body: "{}")
        #expect(APIFixture.status(unknown) == 404 && unknown.contains(#""method":"io.example.Notes.Nope""#), "\(unknown)")
        f.dispatcher.unregister(interface: "io.example.Notes")
        for path in ["/v1/io.example.Notes/Add", "/v1/io.example/Notes.Add"] {
            let gone = try await f.request("POST", path, body: #"{"text":"gone"}"#)
            #expect(APIFixture.status(gone) == 404 && gone.contains("MethodNotFound"), "\(path): \(gone)")
        }
        await f.server.stop()
    }

    @Test func aSocketOnlyMethodIsNotRoutedAndTheBusRefusesItToANetworkCaller() async throws {
        let f = try APIFixture()
        let response = try await f.request("POST", "/v1/io.example.Notes/Attach", body: "{}")
        #expect(APIFixture.status(response) == 404 && response.contains("MethodNotFound"), "\(response)")
        // Not routed is not the only guard: the bus itself refuses a caller from the network.
        var replies: [VarlinkReply] = []
        try await f.dispatcher.handle(VarlinkCall(method: "io.example.Notes.Attach", parameters: [:]), as: Caller(remoteAddress: "203.0.113.9")) { replies.append($0) }
        #expect(replies.first?.error == "org.varlink.service.MethodNotFound", "\(replies)")
        replies = []
        try await f.dispatcher.handle(VarlinkCall(method: "io.example.Notes.Attach", parameters: [:]), as: Caller()) { replies.append($0) }
        #expect(replies.first?.error == nil, "a local caller reaches it: \(replies)")
        await f.server.stop()
    }

    @Test func aQuietStreamStartsAfterTheGraceAndGetsKeepAliveComments() async throws {
        // Both waits are alarms on the server's loop (no task of their own): the stream starts
        // when the grace is over, and a comment comes each interval while nothing else does.
        var options = HTTPAPIOptions()
        options.firstReplyGrace = .milliseconds(50)
        options.keepAliveInterval = .milliseconds(200)
        let f = try APIFixture(options: options)
        let fd = try f.server.connect()
        f.server.send("POST /v1/io.example.Notes/Quiet HTTP/1.1\r\nAccept: text/event-stream\r\nContent-Length: 2\r\n\r\n{}", on: fd)
        let started = ContinuousClock.now
        let text = try await f.server.read(fd) { $0.ranges(of: ": keep-alive\n\n").count >= 3 }
        let elapsed = ContinuousClock.now - started
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("text/event-stream"), "\(text)")
        #expect(text.ranges(of: ": keep-alive\n\n").count == 3, "three keep-alive comments: \(text)")
        // Three intervals of 200 ms; the loop's sweep fires each within ~100 ms. The upper bound
        // only says they came by themselves: the whole suite on two cores once took 8 s here.
        #expect(elapsed >= .milliseconds(550) && elapsed < .seconds(20), "\(elapsed)")
        close(fd)
        await f.server.stop()
    }

    @Test func theOpenAPIDocumentHasTheRoutedMethodsAndTheirSchemas() async throws {
        let f = try APIFixture()
        let response = try await f.request("GET", "/openapi.json")
        let document = try JSONParser.parse(Array(APIFixture.body(response).utf8))
        #expect(document["openapi"] == "3.1.0")
        let paths = document["paths"]?.objectValue ?? [:]
        #expect(
            Set(paths.keys) == [
                "/v1/io.example.Notes/Add", "/v1/io.example.Notes/Watch", "/v1/io.example.Notes/Refuse", "/v1/io.example.Notes/Quiet", "/v1/io.example.Notes/Quick", "/healthz",
                "/readyz", "/metrics",
            ])
        let add = paths["/v1/io.example.Notes/Add"]?["post"]
        let request = add?["requestBody"]?["content"]?["application/json"]?["schema"]
        #expect(request?["required"] == ["text"], "the optional tag is not required")
        #expect(request?["properties"]?["tag"] == ["anyOf": [["type": "string"], ["type": "null"]]])
        #expect(add?["responses"]?["200"]?["content"]?["application/json"]?["schema"]?["properties"]?["note"] == ["$ref": "#/components/schemas/io.example.Notes.Note"])
        #expect(document["components"]?["schemas"]?["io.example.Notes.Note"]?["required"] == ["id", "text"])
        #expect(paths["/v1/io.example.Notes/Watch"]?["post"]?["responses"]?["200"]?["content"]?["text/event-stream"] != nil)
        // Each declared error with its typed parameters, under the status it is answered with.
        let schemas = document["components"]?["schemas"]
        #expect(schemas?["error.io.example.Notes.Crowded"]?["properties"]?["error"] == ["const": "io.example.Notes.Crowded"])
        #expect(schemas?["error.io.example.Notes.Crowded"]?["properties"]?["parameters"]?["properties"]?["retryAfterSeconds"] == ["type": "integer", "format": "int64"])
        let refused = paths["/v1/io.example.Notes/Refuse"]?["post"]?["responses"]?["400"]?["content"]?["application/json"]?["schema"]?["anyOf"]
        guard case .array(let alternatives)? = refused else { Issue.record("no anyOf: \(String(describing: refused))"); return }
        #expect(alternatives.contains(["$ref": "#/components/schemas/error.io.example.Notes.Crowded"]), "\(alternatives)")
        // A stream's events have a schema of their own: a reply, or an error.
        let events = paths["/v1/io.example.Notes/Watch"]?["post"]?["responses"]?["200"]?["content"]?["text/event-stream"]?["x-appd-event-schema"]
        #expect(events == ["$ref": "#/components/schemas/stream.io.example.Notes.Watch"])
        guard case .array(let kinds)? = schemas?["stream.io.example.Notes.Watch"]?["oneOf"] else { Issue.record("no event schema"); return }
        let reply = kinds.first
        #expect(
            reply?["properties"]?["event"] == ["const": "reply"] && reply?["properties"]?["data"]?["properties"]?["note"] == ["$ref": "#/components/schemas/io.example.Notes.Note"])
        await f.server.stop()
    }

    @Test func operationsRoutesAnswer() async throws {
        let f = try APIFixture()
        #expect(APIFixture.body(try await f.request("GET", "/healthz")) == #"{"status":"ok"}"#)
        #expect(APIFixture.body(try await f.request("GET", "/readyz")) == #"{"checks":{"database":"ok"},"status":"ready"}"#)
        _ = try await f.request("POST", "/v1/io.example.Notes/Add", body: #"{"text":"m"}"#)
        let metrics = try await f.request("GET", "/metrics")
        #expect(metrics.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(metrics.contains(#"appd_calls_total{method="io.example.Notes.Add",outcome="ok",transport="http"}"#), "\(metrics.prefix(2000))")
        #expect(APIFixture.status(try await f.request("POST", "/healthz")) == 405)
        // HEAD: the GET's status and headers (its Content-Length too), no body — and the
        // connection stays in step: a GET pipelined after it is answered whole.
        let head = try await f.request("HEAD", "/healthz")
        #expect(APIFixture.status(head) == 200 && head.contains("Content-Length: 15\r\n") && APIFixture.body(head).isEmpty, "\(head)")
        let pair = try await f.server.exchange("HEAD /healthz HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(pair.ranges(of: "HTTP/1.1 200 OK").count == 2 && pair.hasSuffix("\r\n\r\n" + #"{"status":"ok"}"#), "\(pair)")
        #expect(try await f.request("HEAD", "/v1/io.example.Notes/Add").hasPrefix("HTTP/1.1 405"))
        // A client's made-up method name never becomes a label (bounded series).
        try await f.dispatcher.handle(VarlinkCall(method: "io.example.Notes.Made-up-7"), as: Caller()) { _ in }
        #expect(Metrics.shared.counter("appd_calls_total", labels: ["io.example.Notes.Made-up-7", "org.varlink.service.MethodNotFound", "varlink"]) == 0)
        #expect(Metrics.shared.counter("appd_calls_total", labels: ["unknown", "org.varlink.service.MethodNotFound", "varlink"]) >= 1)
        await f.server.stop()
    }

    @Test func corsHeadersOnlyForAllowedOrigins() async throws {
        var options = HTTPAPIOptions()
        options.allowedOrigins = ["https://app.example.com"]
        let f = try APIFixture(options: options)
        let allowed = try await f.request("OPTIONS", "/v1/io.example.Notes/Add", headers: ["Origin": "https://app.example.com"])
        #expect(APIFixture.status(allowed) == 204 && allowed.contains("Access-Control-Allow-Origin: https://app.example.com\r\n"), "\(allowed)")
        let other = try await f.request("OPTIONS", "/v1/io.example.Notes/Add", headers: ["Origin": "https://evil.example.com"])
        #expect(APIFixture.status(other) == 403 && !other.contains("Access-Control-Allow-Origin"))
        let call = try await f.request("POST", "/v1/io.example.Notes/Add", body: #"{"text":"x"}"#, headers: ["Origin": "https://evil.example.com"])
        #expect(APIFixture.status(call) == 200 && !call.contains("Access-Control-Allow-Origin"))
        await f.server.stop()
    }

    @Test func rateLimitedMethodsAreCountedPerClientAddressBehindATrustedProxy() async throws {
        var options = HTTPAPIOptions()
        options.rateLimitPerMinute = 2
        options.rateLimitedMethods = ["io.example.Notes.Add"]
        options.trustedProxies = ["127.0.0.1"]
        let f = try APIFixture(options: options)
        var statuses: [Int] = []
        for _ in 0..<3 {
            statuses.append(APIFixture.status(try await f.request("POST", "/v1/io.example.Notes/Add", body: #"{"text":"x"}"#, headers: ["X-Forwarded-For": "198.51.100.1"])))
        }
        #expect(statuses == [200, 200, 429])
        let other = try await f.request("POST", "/v1/io.example.Notes/Add", body: #"{"text":"x"}"#, headers: ["X-Forwarded-For": "198.51.100.2"])
        #expect(APIFixture.status(other) == 200 && other.contains(#""text":"x@198.51.100.2""#), "the forwarded address is the caller's: \(other)")
        await f.server.stop()
    }

    @Test func theLimiterRefillsAndForgetsTheOldestClient() {
        let limiter = RateLimiter(perMinute: 60, trackedClients: 2)
        let start = ContinuousClock.now
        for _ in 0..<60 { #expect(limiter.take("a", now: start) == nil) }
        #expect(limiter.take("a", now: start) == 1, "a token a second")
        #expect(limiter.take("a", now: start.advanced(by: .seconds(1))) == nil)
        _ = limiter.take("b", now: start.advanced(by: .seconds(2)))
        _ = limiter.take("c", now: start.advanced(by: .seconds(3)))
        #expect(limiter.take("a", now: start.advanced(by: .seconds(3))) == nil, "'a' was forgotten (a full bucket again)")
        #expect(RateLimiter(perMinute: 0, trackedClients: 1).take("x") == nil, "0 turns the limit off")
    }

    /// A flood of new addresses: a full table forgets its oldest tenth at once, so the next
    /// tenth of new addresses is admitted without touching the others.
    @Test func aFullTableForgetsItsOldestTenthAtOnce() {
        let limiter = RateLimiter(perMinute: 1, trackedClients: 1000)
        let start = ContinuousClock.now
        for i in 0..<1000 { _ = limiter.take("10.0.\(i / 256).\(i % 256)", now: start.advanced(by: .milliseconds(i))) }
        #expect(limiter.tracked == 1000)
        #expect(limiter.take("10.0.0.5", now: start.advanced(by: .seconds(2))) != nil, "a tracked address keeps its empty bucket")
        _ = limiter.take("192.0.2.1", now: start.advanced(by: .seconds(2)))
        #expect(limiter.tracked == 901, "the oldest hundred were forgotten, the newcomer added")
        for i in 2..<100 { _ = limiter.take("192.0.2.\(i)", now: start.advanced(by: .seconds(2))) }
        #expect(limiter.tracked == 999)
        #expect(limiter.take("10.0.0.5", now: start.advanced(by: .seconds(3))) != nil, "touched recently, so kept: still limited")
        #expect(limiter.take("10.0.0.6", now: start.advanced(by: .seconds(3))) == nil, "among the oldest, so forgotten: a full bucket")
    }

    /// Security review finding 12: the addresses of one IPv6 /64 share one bucket.
    @Test func anIPv6SlashSixtyFourIsOneClient() {
        #expect(NetworkAddress.client("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(NetworkAddress.client("2001:DB8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64")
        #expect(NetworkAddress.client("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(NetworkAddress.client("192.0.2.7") == "192.0.2.7" && NetworkAddress.client("unix") == "unix")
        let limiter = RateLimiter(perMinute: 3, trackedClients: 100)
        let now = ContinuousClock.now
        // The API keys its limiter by client network.
        for i in 1...3 { #expect(limiter.take(NetworkAddress.client("2001:db8:1:2::\(i)"), now: now) == nil) }
        #expect(limiter.take(NetworkAddress.client("2001:db8:1:2:dead:beef::4"), now: now) != nil, "a fourth address of the same /64 is limited")
        #expect(limiter.take(NetworkAddress.client("2001:db8:1:3::1"), now: now) == nil, "the next /64 is another client")
        #expect(limiter.tracked == 2)
    }

    @Test func theForwardedAddressIsBelievedOnlyFromATrustedProxy() {
        var request = HTTPServerRequest(method: "GET", target: "/", headers: ["x-forwarded-for": "203.0.113.9, 10.0.0.2"])
        request.peerAddress = "10.0.0.1"
        #expect(ClientAddress.of(request, trustedProxies: []) == "10.0.0.1")
        #expect(ClientAddress.of(request, trustedProxies: ["10.0.0.1"]) == "10.0.0.2")
        #expect(ClientAddress.of(request, trustedProxies: ["10.0.0.1", "10.0.0.2"]) == "203.0.113.9")
    }

    @Test func aNetworkCallerIsNeverTheDaemon() {
        let gate = AdminGate(adminGroup: nil)
        #expect(gate.isPrivileged(Caller()), "no peer, no user, no plugin: the daemon itself")
        #expect(!gate.isPrivileged(Caller(remoteAddress: "203.0.113.1")))
        #expect(!gate.isPrivileged(Caller(sessionToken: SessionToken("t"), remoteAddress: "127.0.0.1")))
    }

    @Test func anErrorIsAnsweredWithTheStatusOfTheCategoryItsInterfaceDeclares() async throws {
        let f = try APIFixture()
        #expect(f.dispatcher.category(ofError: "io.example.Notes.Closed") == .unavailable)
        let closed = APIErrorStatus.response(error: "io.example.Notes.Closed", parameters: ["retryAfterSeconds": 30], in: f.dispatcher)
        #expect(closed.status == 503 && closed.header("Retry-After") == "30")
        // No category declared (an external plugin's IDL may say none): a refused call.
        let crowded = APIErrorStatus.response(error: "io.example.Notes.Crowded", parameters: ["retryAfterSeconds": 7], in: f.dispatcher)
        #expect(crowded.status == 400 && crowded.header("Retry-After") == nil)
        // org.varlink.service declares its errors' categories too; a name nobody declares is 400.
        #expect(APIErrorStatus.response(error: "org.varlink.service.MethodNotFound", parameters: [:], in: f.dispatcher).status == 404)
        #expect(APIErrorStatus.response(error: "org.varlink.service.PermissionDenied", parameters: [:], in: f.dispatcher).status == 403)
        #expect(APIErrorStatus.response(error: "io.nowhere.X.Y", parameters: [:], in: f.dispatcher).status == 400)
        let unauthenticated = APIErrorStatus.response(error: "io.appd.Auth.Unauthenticated", parameters: [:], category: .unauthenticated)
        #expect(unauthenticated.status == 401 && unauthenticated.header("WWW-Authenticate") == "Bearer")
        let limited = APIErrorStatus.response(error: "io.appd.Auth.TooManyAttempts", parameters: ["retryAfterSeconds": 30], category: .tooManyRequests)
        #expect(limited.status == 429 && limited.header("Retry-After") == "30")
        await f.server.stop()
    }

    @Test func aCallsPathNamesItsMethodOnlyWithExactlyTwoPartsAfterV1() {
        #expect(HTTPAPI.methodName("/v1/io.appd.Todos/Add") == "io.appd.Todos.Add")
        #expect(HTTPAPI.methodName("/v1/io.appd.Todos/") == "io.appd.Todos.")
        #expect(HTTPAPI.methodName("/v1//Add") == ".Add")
        for path in ["/v1/io.appd.Todos", "/v1/io.appd.Todos/Add/x", "/v1/", "/v1/a/b/"] {
            #expect(HTTPAPI.methodName(path) == "", "\(path)")
        }
    }

    @Test func requestTargetsAreSplitAndDecoded() {
        let request = HTTPServerRequest(method: "GET", target: "/a/b?x=1&y=%20z+w&bad=%G1")
        #expect(request.path == "/a/b" && request.query["x"] == "1" && request.query["y"] == " z w" && request.query["bad"] == "")
        #expect(HTTPServerRequest.parse(head: Array("GET /x HTTP/1.0\r\nConnection: keep-alive".utf8)[...], maxBodyBytes: 10).map(\.keepAlive) == .success(true))
        #expect(HTTPServerRequest.parse(head: Array("GET /x HTTP/1.1\r\nConnection: close".utf8)[...], maxBodyBytes: 10).map(\.keepAlive) == .success(false))
        #expect(
            HTTPServerRequest.parse(head: Array("GET x HTTP/1.1".utf8)[...], maxBodyBytes: 10).map(\.keepAlive)
                == .failure(HTTPRefusal(status: 400, error: "BadRequest", reason: "the request target must be an absolute path of visible ASCII characters")))
    }

    @Test func metricsRenderInThePrometheusTextFormat() async {
        let metrics = Metrics()
        metrics.increment("t_total", help: "A counter.\nTwo lines.", labels: [("m", "a\"b\\c")])
        metrics.observe("t_seconds", help: "A histogram.", value: 0.003, buckets: [0.001, 0.01])
        metrics.observe("t_seconds", help: "A histogram.", value: 5, buckets: [0.001, 0.01])
        metrics.register(Metrics.Collector(name: "t_gauge", help: "A gauge.") { [([], 2.5)] })
        let text = await metrics.render()
        #expect(text.contains("# HELP t_total A counter.\\nTwo lines.\n# TYPE t_total counter\nt_total{m=\"a\\\"b\\\\c\"} 1\n"), "\(text)")
        #expect(
            text.contains("t_seconds_bucket{le=\"0.001\"} 0\nt_seconds_bucket{le=\"0.01\"} 1\nt_seconds_bucket{le=\"+Inf\"} 2\nt_seconds_sum 5.003\nt_seconds_count 2\n"), "\(text)"
        )
        #expect(text.contains("# TYPE t_gauge gauge\nt_gauge 2.5\n"), "\(text)")
    }

    /// A stream is logged when it starts and again when it ends, with its whole duration; a
    /// plain request once. Durations read as milliseconds with three decimals.
    @Test func aStreamIsLoggedWhenItStartsAndWhenItEnds() async throws {
        let f = try APIFixture()
        _ = try await f.request("POST", "/v1/io.example.Notes/Watch", body: #"{"count":3}"#, headers: ["Accept": "text/event-stream"])
        _ = try await f.request("POST", "/v1/io.example.Notes/Add", body: #"{"text":"x"}"#)
        let records = f.log.records.filter { $0.message.hasPrefix("http") }
        #expect(records.map(\.message) == ["http stream started", "http stream ended", "http"], "\(records)")
        for record in records {
            #expect(record.metadata["status"] == "200")
            #expect(record.metadata["ms"]?.wholeMatch(of: /[0-9]+\.[0-9]{3}/) != nil, "\(record.metadata)")
        }
        let started = try #require(records.first?.metadata["ms"].flatMap(Double.init))
        let ended = try #require(records.dropFirst().first?.metadata["ms"].flatMap(Double.init))
        #expect(ended >= started)
        #expect(records.prefix(2).allSatisfy { $0.metadata["path"] == "/v1/io.example.Notes/Watch" })
        await f.server.stop()
    }

    @Test func theAccessLogHasNoSecret() async throws {
        let f = try APIFixture()
        _ = try await f.request(
            "POST", "/v1/io.example.Notes/Add?token=query-secret-1", body: #"{"text":"body-secret-2"}"#,
            headers: ["Authorization": "Bearer bearer-secret-3", "Cookie": "session=cookie-secret-4"])
        _ = try await f.request("GET", "/nowhere?key=query-secret-5")
        let lines = f.log.records.map { "\($0.message) \($0.metadata)" }
        #expect(lines.contains { $0.contains("/v1/io.example.Notes/Add") && $0.contains("200") }, "the request is logged: \(lines)")
        for secret in ["query-secret-1", "body-secret-2", "bearer-secret-3", "cookie-secret-4", "query-secret-5", "nowhere"] {
            #expect(!lines.contains { $0.contains(secret) }, "\(secret) leaked into \(lines)")
        }
        await f.server.stop()
    }
}

extension HTTPRefusals {
    /// As appd wires them: Auth's errors.
    static let auth = HTTPRefusals(notBearer: AuthError.unauthenticated, clientRateLimited: { AuthError.tooManyAttempts(retryAfterSeconds: $0) })
}
