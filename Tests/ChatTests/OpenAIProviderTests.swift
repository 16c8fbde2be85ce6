// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing
import TestSupport
@testable import HTTP
@testable import Chat

/// The OpenAI-compatible provider against a scripted server on loopback.
@Suite(.cleansUp) struct OpenAIProviderTests {
    func provider(_ server: FakeOpenAIServer, idle: Duration = .seconds(5), key: String? = "sk-test") throws -> OpenAIProvider {
        var options = OpenAIProvider.Options(baseURL: server.baseURL, model: "test-model", apiKey: key)
        options.timeouts.idle = idle
        options.timeouts.firstByte = .seconds(5)
        return try OpenAIProvider(options: options)
    }

    @Test func aNormalStream() async throws {
        let server = FakeOpenAIServer { _ in
            [
                .send(FakeOpenAIServer.head()), .send(FakeOpenAIServer.chunk(FakeOpenAIServer.delta("Hello"))),
                .send(FakeOpenAIServer.chunk(FakeOpenAIServer.delta(", world") + FakeOpenAIServer.usage + FakeOpenAIServer.done)), .send(FakeOpenAIServer.end),
            ]
        }
        defer { server.stop() }
        let (text, usage) = try await collect(try provider(server), "say hi")
        #expect(text == "Hello, world")
        #expect(usage.map { [$0.0, $0.1] } == [7, 3])
        let request = try #require(server.requests.first?.request)
        #expect(request.hasPrefix("POST /v1/chat/completions HTTP/1.1\r\n"))
        #expect(request.contains("Authorization: Bearer sk-test"))
        #expect(request.contains(#""stream":true"#) && request.contains(#""model":"test-model""#) && request.contains("say hi"))
    }

    /// Hardening finding 13: an API key never goes out in clear text beyond this machine.
    @Test func anAPIKeyIsNeverSentInClearTextToAnotherHost() throws {
        for url in ["http://api.example.com/v1", "http://10.0.0.5:8080/v1", "http://127.example.com/v1"] {
            #expect(throws: ProviderError.self) { try OpenAIProvider(options: .init(baseURL: url, model: "m", apiKey: "sk-secret")) }
        }
        for url in ["http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://[::1]:8080/v1", "https://api.example.com/v1"] {
            #expect((try? OpenAIProvider(options: .init(baseURL: url, model: "m", apiKey: "sk-secret"))) != nil, "\(url)")
        }
        // Without a key there is nothing to leak.
        #expect((try? OpenAIProvider(options: .init(baseURL: "http://ollama.internal:11434/v1", model: "m", apiKey: nil))) != nil)
    }

    @Test func byteByByteWithCommentsAndNoDone() async throws {
        let body = ": ping\n\n" + FakeOpenAIServer.delta("Sp") + ": another comment\n" + FakeOpenAIServer.delta("lit ✓")
        let server = FakeOpenAIServer { _ in [.send(FakeOpenAIServer.head(chunked: false)), .sendBytewise(Array(body.utf8))] }
        defer { server.stop() }
        // The connection closes without [DONE]: what arrived is the reply.
        #expect(try await collect(try provider(server)).text == "Split ✓")
    }

    @Test func aMidStreamErrorFailsTheReply() async throws {
        let server = FakeOpenAIServer { _ in
            [.send(FakeOpenAIServer.head(chunked: false)), .send(Array((FakeOpenAIServer.delta("partial") + #"data: {"error":{"message":"model overloaded"}}"# + "\n\n").utf8))]
        }
        defer { server.stop() }
        var text = ""
        do {
            try await provider(server).reply(to: [ChatTurn(role: .user, text: "x")]) { chunk in
                if case .delta(let d) = chunk { text += d }
            }
            Issue.record("expected a failure")
        } catch let error as ProviderError {
            #expect(error.reason.contains("model overloaded"))
        }
        #expect(text == "partial")
        #expect(server.requests.count == 1)
    }

    @Test func a429WithRetryAfterIsRetriedThenSucceeds() async throws {
        let server = FakeOpenAIServer { n in
            n == 0 ? [.send(FakeOpenAIServer.error(status: 429, retryAfter: 1))] : [.send(FakeOpenAIServer.head(chunked: false)), .send(FakeOpenAIServer.reply(["ok"]))]
        }
        defer { server.stop() }
        let started = ContinuousClock.now
        #expect(try await collect(try provider(server)).text == "ok")
        #expect(ContinuousClock.now - started >= .milliseconds(900))  // Retry-After: 1 was honoured
        #expect(server.requests.count == 2)
    }

    @Test func retriesStopAfterTwo() async throws {
        let server = FakeOpenAIServer { _ in [.send(FakeOpenAIServer.error(status: 503, retryAfter: 0))] }
        defer { server.stop() }
        await #expect(throws: ProviderError.self) { _ = try await collect(try provider(server)) }
        #expect(server.requests.count == 3)
    }

    @Test func aClientErrorIsNotRetried() async throws {
        let server = FakeOpenAIServer { _ in [.send(FakeOpenAIServer.error(status: 401))] }
        defer { server.stop() }
        do {
            _ = try await collect(try provider(server))
            Issue.record("expected a failure")
        } catch let error as ProviderError {
            #expect(error.reason.contains("401"))
        }
        #expect(server.requests.count == 1)
    }

    @Test func aFailureAfterTheFirstTokenIsNotRetried() async throws {
        // 200, one token, then the chunked body breaks off (a 500 on the upstream's side).
        let server = FakeOpenAIServer { _ in
            [.send(FakeOpenAIServer.head()), .send(FakeOpenAIServer.chunk(FakeOpenAIServer.delta("one"))), .send(Array("1f\r\nHTTP/1.1 500".utf8))]
        }
        defer { server.stop() }
        await #expect(throws: ProviderError.self) { _ = try await collect(try provider(server)) }
        #expect(server.requests.count == 1)
    }

    @Test func aStallHitsTheIdleTimeout() async throws {
        let server = FakeOpenAIServer { _ in
            [.send(FakeOpenAIServer.head()), .send(FakeOpenAIServer.chunk(FakeOpenAIServer.delta("wait"))), .holdOpen(milliseconds: 30_000)]
        }
        defer { server.stop() }
        let started = ContinuousClock.now
        do {
            _ = try await collect(try provider(server, idle: .milliseconds(300)))
            Issue.record("expected the idle timeout")
        } catch let error as ProviderError {
            #expect(error.reason.contains("idle"))
        }
        // The server holds the stream open for 30 s: finishing well before that means the 300 ms idle
        // timeout ended it (a wide margin, so a loaded machine does not fail it).
        #expect(ContinuousClock.now - started < .seconds(15))
    }

    @Test func cancellingClosesTheUpstreamAtOnce() async throws {
        let server = FakeOpenAIServer { _ in
            [.send(FakeOpenAIServer.head()), .send(FakeOpenAIServer.chunk(FakeOpenAIServer.delta("first"))), .holdOpen(milliseconds: 10_000)]
        }
        defer { server.stop() }
        let provider = try provider(server)
        let tokens = Atomic<Int>(0)
        let reader = Task {
            try await provider.reply(to: [ChatTurn(role: .user, text: "x")]) { chunk in if case .delta = chunk { tokens.add(1, ordering: .relaxed) } }
        }
        #expect(await eventually { tokens.load(ordering: .relaxed) > 0 })
        #expect(tokens.load(ordering: .relaxed) == 1)
        let cancelled = ContinuousClock.now
        reader.cancel()  // what Cancel or a closed client connection does to the reply
        // The server holds the stream open for 10 s: closing well before that means the cancel closed it
        // (a wide margin, so a loaded machine does not fail it).
        #expect(await eventually(timeout: .seconds(5)) { server.requests.first?.clientClosedAt != nil })
        let closed = try #require(server.requests.first?.clientClosedAt)
        #expect(closed - cancelled < .seconds(5))
    }

    @Test func stoppingClosesTheUpstreamAtOnceAndHandsNothingOnAfterIt() async throws {
        let server = FakeOpenAIServer { _ in
            [.send(FakeOpenAIServer.head()), .send(FakeOpenAIServer.chunk(FakeOpenAIServer.delta("first"))), .holdOpen(milliseconds: 10_000)]
        }
        defer { server.stop() }
        let provider = try provider(server)
        let stop = StopSignal()
        let tokens = Atomic<Int>(0)
        let reader = Task { () -> (any Error)? in
            do {
                try await provider.reply(to: [ChatTurn(role: .user, text: "x")], options: ReplyOptions(), stop: stop) { chunk in
                    if case .delta = chunk { tokens.add(1, ordering: .relaxed) }
                }
                return nil
            } catch {
                return error
            }
        }
        #expect(await eventually { tokens.load(ordering: .relaxed) > 0 })
        let stopped = ContinuousClock.now
        stop.stop()  // what Chat.Cancel does: the caller's task goes on
        let error = await reader.value
        #expect(error is StopSignal.Stopped, "\(String(describing: error))")
        // The server holds the stream open for 10 s: ending well before that means the stop ended it
        // (a wide margin, so a loaded machine does not fail it).
        #expect(ContinuousClock.now - stopped < .seconds(5))
        #expect(tokens.load(ordering: .relaxed) == 1)
        #expect(await eventually(timeout: .seconds(5)) { server.requests.first?.clientClosedAt != nil })
        let closed = try #require(server.requests.first?.clientClosedAt)
        #expect(closed - stopped < .seconds(5))
    }

    @Test func aStopBeforeTheRequestSendsNothing() async throws {
        let server = FakeOpenAIServer { _ in [.send(FakeOpenAIServer.head()), .send(FakeOpenAIServer.chunk(FakeOpenAIServer.delta("never")))] }
        defer { server.stop() }
        let stop = StopSignal()
        stop.stop()
        await #expect(throws: StopSignal.Stopped.self) {
            try await provider(server).reply(to: [ChatTurn(role: .user, text: "x")], options: ReplyOptions(), stop: stop) { _ in
                Issue.record("a chunk after the stop")
            }
        }
        #expect(server.requests.isEmpty)
    }

    @Test func nothingListeningIsAConnectFailure() async throws {
        var options = OpenAIProvider.Options(baseURL: "http://127.0.0.1:9/v1", model: "m")
        options.timeouts.connect = .seconds(1)
        do {
            _ = try await collect(try OpenAIProvider(options: options))
            Issue.record("expected a failure")
        } catch let error as ProviderError {
            #expect(error.reason.contains("connect"))
        }
    }
}
