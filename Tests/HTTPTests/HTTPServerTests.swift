// SPDX-License-Identifier: Apache-2.0
import Bus
import CSystem
import Glibc
import HTTP
import Synchronization
import Testing
import TestSupport

/// A server on a loopback port, running until `stop`.
struct RunningServer {
    let port: UInt16
    let task: Task<Void, Never>

    init(limits: HTTPServerLimits = HTTPServerLimits(), handler: @escaping HTTPServer.Handler) throws {
        try self.init(limits: limits, dispatch: { request, body in .later { await handler(request, body) } })
    }

    init(limits: HTTPServerLimits = HTTPServerLimits(), dispatch: @escaping HTTPServer.Dispatch) throws {
        let fd = appd_tcp_listen("127.0.0.1", 0, 16, 1)
        guard fd >= 0 else { throw HarnessError("cannot listen") }
        port = UInt16(appd_tcp_port(fd))
        let server = try HTTPServer(name: "test-http", listenFD: fd, limits: limits, logger: Logger(label: "t", handler: InMemoryLogHandler()), dispatch: dispatch)
        task = Task { await server.run() }
    }

    func stop() async {
        task.cancel()
        await task.value
    }

    /// The blocking client runs here, never on the cooperative threads the server needs.
    static let client = BlockingPool(name: "test-client", threads: 8, queueLimit: 64)

    /// Sends `request` on a new connection and reads until the server closes it.
    func exchange(_ request: String) async throws -> String {
        let fd = try connect()
        defer { close(fd) }
        send(request, on: fd)
        return try await readAll(fd)
    }

    func send(_ request: String, on fd: Int32) {
        _ = Array(request.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func connect() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { throw HarnessError("cannot connect: \(errno)") }
        return fd
    }

    func readAll(_ fd: Int32) async throws -> String {
        try await Self.client.run { Self.readBlocking(fd) }
    }

    /// Reads from `fd` until what has arrived satisfies `done` (or the connection ends); then
    /// runs `then` in the same blocking job (a request sent at once, with no hop in between).
    func read(_ fd: Int32, then: @escaping @Sendable () -> Void = {}, until done: @escaping @Sendable (String) -> Bool) async throws -> String {
        try await Self.client.run {
            defer { then() }
            var data: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !done(String(decoding: data, as: UTF8.self)) {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                data += chunk[0..<n]
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    static func readBlocking(_ fd: Int32) -> String {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += chunk[0..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }
}

@Suite struct HTTPServerTests {
    @Test func aRequestAnsweredNowIsAnsweredOnTheLoopWithNoTaskAndInOrderWithTheOthers() async throws {
        let server = try RunningServer { request, _ in
            // The body says whether it was answered with or without a task.
            @Sendable func answer() -> HTTPResponse { HTTPResponse(status: 200, body: ["path": .string(request.path), "inTask": .bool(withUnsafeCurrentTask { $0 != nil })]) }
            guard request.path == "/later" else { return .now(answer()) }
            return .later {
                try? await Task.sleep(for: .milliseconds(100))
                return answer()
            }
        }
        let now = try await server.exchange("GET /now HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(now.hasSuffix(#"{"inTask":false,"path":"/now"}"#), "\(now)")
        // Pipelined on one connection: the one answered now waits for the one before it.
        let both = try await server.exchange("GET /later HTTP/1.1\r\n\r\nGET /now HTTP/1.1\r\nConnection: close\r\n\r\n")
        let later = try #require(both.firstRange(of: #"{"inTask":true,"path":"/later"}"#), "\(both)")
        let after = try #require(both.firstRange(of: #"{"inTask":false,"path":"/now"}"#), "\(both)")
        #expect(later.upperBound <= after.lowerBound)
        await server.stop()
    }

    @Test func aRequestIsReadWholeThenAnsweredAndTheConnectionClosedWhenAsked() async throws {
        let server = try RunningServer { head, body in HTTPResponse(status: 200, body: ["bytes": .int(Int64(body.count)), "declared": .int(Int64(head.contentLength))]) }
        let response = try await server.exchange("POST /x HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(response)")
        #expect(response.contains("Connection: close\r\n"))
        #expect(response.hasSuffix(#"{"bytes":5,"declared":5}"#), "\(response)")
        await server.stop()
    }

    @Test func badHeadsAndExtraBytesAreRefusedWithTheirStatus() async throws {
        var limits = HTTPServerLimits()
        limits.maxHeadBytes = 1024
        let server = try RunningServer(limits: limits) { _, _ in HTTPResponse(status: 200, body: [:]) }
        #expect(try await server.exchange("POST /x HTTP/1.1\r\nX: " + String(repeating: "a", count: 2000) + "\r\n\r\n").hasPrefix("HTTP/1.1 431 "))
        #expect(try await server.exchange("POST /x HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 411 "))
        #expect(try await server.exchange("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab").hasPrefix("HTTP/1.1 400 "))
        await server.stop()
    }

    @Test func aRequestThatDoesNotArriveInTimeIsAnswered408() async throws {
        var limits = HTTPServerLimits()
        limits.requestTimeout = .milliseconds(300)
        let server = try RunningServer(limits: limits) { _, _ in HTTPResponse(status: 200, body: [:]) }
        let started = ContinuousClock.now
        let response = try await server.exchange("POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        // The 408 came from the server's timer: not at once, and before the client's own 10 s
        // receive timeout gave up (which would leave no answer). No tighter upper bound: the
        // client's reads share a pool with this suite's other tests, whose reads can hold it.
        #expect(response.hasPrefix("HTTP/1.1 408 "), "\(response)")
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        await server.stop()
    }

    @Test func requestsBeyondTheHandlingLimitAreAnswered503WithRetryAfter() async throws {
        var limits = HTTPServerLimits()
        limits.maxHandling = 1
        let entered = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        let server = try RunningServer(limits: limits) { _, _ in
            entered.store(true, ordering: .releasing)
            while !release.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
            return HTTPResponse(status: 200, body: [:])
        }
        let first = try server.connect()
        server.send("POST /x HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", on: first)
        #expect(await eventually { entered.load(ordering: .acquiring) })
        let second = try await server.exchange("POST /x HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        #expect(second.hasPrefix("HTTP/1.1 503 ") && second.contains("Retry-After: 1\r\n"), "\(second)")
        release.store(true, ordering: .releasing)
        #expect(try await server.readAll(first).hasPrefix("HTTP/1.1 200 "))
        close(first)
        await server.stop()
    }

    @Test func stoppingLetsARequestInFlightFinish() async throws {
        let entered = Atomic<Bool>(false)
        let server = try RunningServer { _, _ in
            entered.store(true, ordering: .releasing)
            try? await Task.sleep(for: .milliseconds(200))
            return HTTPResponse(status: 200, body: ["done": true])
        }
        let fd = try server.connect()
        server.send("POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", on: fd)
        #expect(await eventually { entered.load(ordering: .acquiring) })
        let stopping = Task { await server.stop() }
        let response = try await server.readAll(fd)
        close(fd)
        await stopping.value
        #expect(response.hasPrefix("HTTP/1.1 200 ") && response.hasSuffix(#"{"done":true}"#), "\(response)")
    }

    @Test func aKeepAliveConnectionServesPipelinedRequestsInOrderThenClosesWhenIdle() async throws {
        var limits = HTTPServerLimits()
        // Long enough that the client, whose threads other suites share, still sends the third
        // request in time on a loaded machine (300 ms, then 1 s, flaked under the parallel suite).
        limits.keepAliveTimeout = .seconds(3)
        let server = try RunningServer(limits: limits) { request, body in
            HTTPResponse(status: 200, body: ["path": .string(request.path), "q": .string(request.query["q"] ?? ""), "bytes": .int(Int64(body.count))])
        }
        let fd = try server.connect()
        defer { close(fd) }
        // Two requests in one write, a third once both are answered (sent by the same blocking
        // job that saw the answers): three answers on one connection.
        server.send("POST /a?q=x%20y HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET /b HTTP/1.1\r\n\r\n", on: fd)
        let first = try await server.read(fd, then: { server.send("POST /c HTTP/1.1\r\nContent-Length: 1\r\n\r\n!", on: fd) }) {
            $0.contains(#""path":"/b""#)
        }
        let started = ContinuousClock.now
        let all = try await first + server.readAll(fd)
        let answers = all.ranges(of: "HTTP/1.1 200 OK\r\n")
        #expect(answers.count == 3, "\(all)")
        #expect(all.contains(#"{"bytes":2,"path":"/a","q":"x y"}"#) && all.contains(#""path":"/b""#) && all.contains(#""path":"/c""#), "\(all)")
        #expect(all.contains("Connection: keep-alive\r\n"))
        // Closed by the idle timeout, not left open.
        #expect(ContinuousClock.now - started < .seconds(10))
        await server.stop()
    }

    @Test func aStreamedResponseIsChunkedAndCancelledWhenTheClientLeaves() async throws {
        let cancelled = Atomic<Bool>(false)
        let server = try RunningServer { _, _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream")]) { writer in
                do {
                    try await writer.write("data: one\n\n")
                    try await writer.write("data: two\n\n")
                    while true {
                        try await Task.sleep(for: .milliseconds(20))
                        try await writer.write(": keep-alive\n\n")
                    }
                } catch {
                    cancelled.store(true, ordering: .releasing)
                }
            }
        }
        let fd = try server.connect()
        server.send("GET /events HTTP/1.1\r\n\r\n", on: fd)
        let head = try await server.read(fd) { $0.contains("two") }
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.contains("Transfer-Encoding: chunked\r\n"), "\(head)")
        #expect(head.contains("b\r\ndata: one\n\n\r\n"), "\(head)")
        close(fd)
        #expect(await eventually { cancelled.load(ordering: .acquiring) })
        await server.stop()
    }

    @Test func aStreamThatEndsLeavesTheConnectionReadyForTheNextRequest() async throws {
        let server = try RunningServer { request, _ in
            guard request.path == "/stream" else { return HTTPResponse(status: 200, body: ["next": true]) }
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")]) { writer in
                try? await writer.write("abc")
            }
        }
        let fd = try server.connect()
        defer { close(fd) }
        server.send("GET /stream HTTP/1.1\r\n\r\nGET /after HTTP/1.1\r\nConnection: close\r\n\r\n", on: fd)
        let all = try await server.readAll(fd)
        #expect(all.contains("3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"), "\(all)")
        #expect(all.hasSuffix(#"{"next":true}"#), "\(all)")
        await server.stop()
    }

    @Test func aHeadOfAStreamGetsItsHeadNoChunksAndItsStreamFunctionEnds() async throws {
        let ended = Atomic<Int>(0)
        let server = try RunningServer { request, _ in
            guard request.path == "/stream" else { return HTTPResponse(status: 200, body: ["next": true]) }
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")]) { writer in
                while (try? await writer.write("x")) != nil { try? await Task.sleep(for: .milliseconds(20)) }
                ended.add(1, ordering: .relaxed)
            }
        }
        let all = try await server.exchange("HEAD /stream HTTP/1.1\r\n\r\nGET /after HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(all.hasPrefix("HTTP/1.1 200 OK\r\n") && all.contains("Transfer-Encoding: chunked\r\n"), "\(all)")
        #expect(all.contains("keep-alive\r\n\r\nHTTP/1.1 200 OK\r\n"), "no chunk between the HEAD's head and the next response: \(all)")
        #expect(all.hasSuffix(#"{"next":true}"#), "\(all)")
        #expect(await eventually { ended.load(ordering: .relaxed) == 1 }, "the stream function ended")
        await server.stop()
    }

    @Test func connectionsBeyondTheLimitAreAnswered503() async throws {
        var limits = HTTPServerLimits()
        limits.maxConnections = 2
        let server = try RunningServer(limits: limits) { _, _ in HTTPResponse(status: 200, body: [:]) }
        let a = try server.connect(), b = try server.connect()
        defer { close(a); close(b) }
        server.send("GET / HTTP/1.1\r\n\r\n", on: a)
        server.send("GET / HTTP/1.1\r\n\r\n", on: b)
        try await Task.sleep(for: .milliseconds(100))
        let third = try await server.exchange("GET / HTTP/1.1\r\n\r\n")
        #expect(third.hasPrefix("HTTP/1.1 503 "), "\(third)")
        await server.stop()
    }

    @Test func aClientThatClosesItsSideAfterTheRequestStillGetsTheAnswer() async throws {
        let server = try RunningServer { _, _ in
            try? await Task.sleep(for: .milliseconds(100))
            return HTTPResponse(status: 200, body: ["late": true])
        }
        let fd = try server.connect()
        defer { close(fd) }
        server.send("POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", on: fd)
        shutdown(fd, Int32(SHUT_WR))
        let response = try await server.readAll(fd)
        #expect(response.hasPrefix("HTTP/1.1 200 ") && response.contains("Connection: close\r\n") && response.hasSuffix(#"{"late":true}"#), "\(response)")
        await server.stop()
    }

    @Test func aBodyOverTheLimitIsAnswered413EvenWhileTheClientKeepsSending() async throws {
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 1000
        let server = try RunningServer(limits: limits) { _, _ in HTTPResponse(status: 200, body: [:]) }
        for _ in 0..<5 {
            let fd = try server.connect()
            // The whole upload goes out without an error (a client that stops at a failed write,
            // as most do, would never read the answer), then the answer is read.
            let (sentAll, response) = try await RunningServer.client.run { () -> (Bool, String) in
                var sentAll = true
                let body = [UInt8](repeating: 120, count: 8 * 1024 * 1024)
                let head = Array("POST /upload HTTP/1.1\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
                for piece in [head, body] {
                    var sent = 0
                    while sent < piece.count {
                        let n = piece[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        if n <= 0 {
                            sentAll = false
                            break
                        }
                        sent += n
                    }
                }
                return (sentAll, RunningServer.readBlocking(fd))
            }
            close(fd)
            #expect(sentAll, "the server reset the connection while the client was still sending")
            #expect(response.hasPrefix("HTTP/1.1 413 "), "\(response.prefix(200))")
        }
        await server.stop()
    }

    @Test func aStreamBeyondTheLimitIsAnswered503AndItsStreamFunctionStillEnds() async throws {
        var limits = HTTPServerLimits()
        limits.maxStreams = 1
        let ended = Atomic<Int>(0)
        let server = try RunningServer(limits: limits) { _, _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")]) { writer in
                // Holds something until a write fails (as an event stream holds its subscription).
                while (try? await writer.write("x")) != nil { try? await Task.sleep(for: .milliseconds(20)) }
                ended.add(1, ordering: .relaxed)
            }
        }
        let first = try server.connect()
        server.send("GET /a HTTP/1.1\r\n\r\n", on: first)
        try await Task.sleep(for: .milliseconds(100))
        let second = try await server.exchange("GET /b HTTP/1.1\r\n\r\n")
        #expect(second.hasPrefix("HTTP/1.1 503 "), "\(second)")
        #expect(await eventually { ended.load(ordering: .relaxed) == 1 }, "the refused stream's function ended")
        close(first)
        #expect(await eventually { ended.load(ordering: .relaxed) == 2 }, "the first ended when its client left")
        await server.stop()
    }
}
