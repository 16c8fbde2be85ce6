// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import HTTP
import Synchronization
import Testing
import TestSupport

/// Work that answers through an `HTTPResponder` (`HTTPHandling.responding`): a whole response or
/// a stream, decided when it has something to say, written from the work's own task.
@Suite struct HTTPResponderTests {
    static let head = HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream")])

    @Test func theWorkDecidesLateBetweenAWholeResponseAndAStreamAndTheFirstAnswerStands() async throws {
        let secondAnswers = Mutex<[String]>([])
        let server = try RunningServer(dispatch: { request, _ in
            switch request.path {
            case "/refused":
                return .responding { responder in
                    try? await Task.sleep(for: .milliseconds(30))
                    let whole = responder.respond(HTTPResponse(status: 409, body: ["error": "Conflict"]))
                    // A whole response went out: no stream can start after it.
                    let stream = responder.startStream(Self.head)
                    let write: Bool = (try? await responder.write("data: late\n\n")) != nil
                    secondAnswers.withLock { $0.append("refused: whole \(whole) stream \(stream) write \(write)") }
                }
            case "/stream":
                return .responding { responder in
                    try? await Task.sleep(for: .milliseconds(30))
                    let started = responder.startStream(Self.head)
                    try? await responder.write("data: one\n\n")
                    let again = responder.startStream(Self.head)
                    let whole = responder.respond(HTTPResponse(status: 500, body: [:]))
                    try? await responder.write("data: two\n\n")
                    secondAnswers.withLock { $0.append("stream: started \(started) again \(again) whole \(whole)") }
                }
            default:
                return .now(HTTPResponse(status: 200, body: ["next": true]))
            }
        })
        let all = try await server.exchange(
            "POST /refused HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET /stream HTTP/1.1\r\n\r\nGET /after HTTP/1.1\r\nConnection: close\r\n\r\n")
        // In order on the one connection: the plain 409, the stream's chunks and its last chunk, the next response.
        #expect(all.hasPrefix("HTTP/1.1 409 Conflict\r\n") && all.contains("Content-Length: 20\r\n"), "\(all)")
        #expect(
            all.contains(#"{"error":"Conflict"}HTTP/1.1 200 OK\#r\#nContent-Type: text/event-stream\#r\#nTransfer-Encoding: chunked\#r\#n"#),
            "the refusal is whole, with no chunk after it, then the stream's head: \(all)")
        #expect(all.contains("b\r\ndata: one\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"), "\(all)")
        #expect(all.hasSuffix(#"{"next":true}"#), "\(all)")
        #expect(!all.contains("late"), "\(all)")
        #expect(
            secondAnswers.withLock { $0.sorted() } == [
                "refused: whole true stream false write false", "stream: started true again true whole false",
            ])
        await server.stop()
    }

    /// A stream the server has no place for is answered 503, and its decorations (CORS, the
    /// count, the access line) see the 503 as a whole response, not the stream's 200.
    @Test func aStreamRefusedForTheLimitIsDecoratedAsThe503ItIs() async throws {
        var limits = HTTPServerLimits()
        limits.maxStreams = 1
        let decorated = Mutex<[String]>([])
        let release = Latch()
        let server = try RunningServer(
            limits: limits,
            dispatch: { request, _ in
                .responding { responder in
                    responder.decorate { response, streamed in
                        response.headers.append(("X-Decorated", "yes"))
                        decorated.withLock { $0.append("\(request.path) \(response.status) \(streamed ? "stream" : "whole")") }
                    }
                    let started = responder.startStream(Self.head)
                    guard started else {
                        // Refused: nothing can be written, as when the client has gone.
                        #expect((try? await responder.write("data: x\n\n")) == nil)
                        return
                    }
                    try? await responder.write("data: open\n\n")
                    await release.wait()
                }
            })
        let first = try server.connect()
        server.send("GET /first HTTP/1.1\r\n\r\n", on: first)
        _ = try await server.read(first, until: { $0.contains("data: open") })
        let second = try await server.exchange("GET /second HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(second.hasPrefix("HTTP/1.1 503 "), "\(second)")
        #expect(second.contains("X-Decorated: yes"), "the refusal is decorated: \(second)")
        #expect(decorated.withLock { $0 } == ["/first 200 stream", "/second 503 whole"])
        release.open()
        close(first)
        await server.stop()
    }

    @Test func workThatAnswersNothingGets500AndTheConnectionGoesOn() async throws {
        let server = try RunningServer(dispatch: { request, _ in
            request.path == "/silent" ? .responding { _ in } : .now(HTTPResponse(status: 200, body: ["next": true]))
        })
        let all = try await server.exchange("GET /silent HTTP/1.1\r\n\r\nGET /after HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(all.hasPrefix("HTTP/1.1 500 Internal Server Error\r\n"), "\(all)")
        #expect(all.contains("the handler gave no response"), "\(all)")
        #expect(all.hasSuffix(#"{"next":true}"#), "\(all)")
        await server.stop()
    }

    @Test func aStreamStartedFromAnotherThreadComesBeforeItsChunksAndEndsWhenTheClientLeaves() async throws {
        let ended = Atomic<Bool>(false)
        let server = try RunningServer(dispatch: { _, _ in
            .responding { responder in
                // Started by someone else (as a grace alarm does), while the work waits.
                Task.detached { responder.startStream(Self.head) }
                while !responder.hasStarted { try? await Task.sleep(for: .milliseconds(5)) }
                #expect(responder.writeIfBelowHighWater(Array(": started\n\n".utf8)))
                while (try? await responder.write("data: x\n\n")) != nil { try? await Task.sleep(for: .milliseconds(10)) }
                ended.store(true, ordering: .releasing)
            }
        })
        let fd = try server.connect()
        server.send("GET /events HTTP/1.1\r\n\r\n", on: fd)
        let seen = try await server.read(fd) { $0.contains("data: x") }
        #expect(seen.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"), "\(seen)")
        #expect(seen.contains("\r\n\r\nb\r\n: started\n\n\r\n"), "the head, then the chunk written without waiting: \(seen)")
        close(fd)
        #expect(await eventually { ended.load(ordering: .acquiring) }, "the client leaving ends the work")
        await server.stop()
    }

    @Test func aHeadToAStreamGetsTheHeadAndItsWritesFail() async throws {
        let writes = Mutex<[Bool]>([])
        let server = try RunningServer(dispatch: { request, _ in
            guard request.path == "/stream" else { return .now(HTTPResponse(status: 200, body: ["next": true])) }
            return .responding { responder in
                let open = responder.startStream(Self.head)
                let wrote = (try? await responder.write("data: x\n\n")) != nil
                writes.withLock { $0 = [open, wrote] }
            }
        })
        let all = try await server.exchange("HEAD /stream HTTP/1.1\r\n\r\nGET /after HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(all.hasPrefix("HTTP/1.1 200 OK\r\n") && all.contains("keep-alive\r\n\r\nHTTP/1.1 200 OK\r\n"), "\(all)")
        #expect(writes.withLock { $0 } == [false, false])
        await server.stop()
    }
}
