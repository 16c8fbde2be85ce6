// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension AppdClient {
    /// Calls a streaming method (`Chat.Send`) and yields its replies as they arrive. An error
    /// in the stream is thrown as its typed error; stopping the iteration (or cancelling its
    /// task) closes the connection, which cancels the call on appd.
    public func stream<C: StreamingCommand>(_ command: C) -> AsyncThrowingStream<C.Reply, any Error> {
        AsyncThrowingStream { continuation in
            // Unstructured: the stream's producer (AsyncThrowingStream's builder is synchronous); cancelled when the consumer stops.
            let task = Task {
                do {
                    let body = try encode(command)
                    let signedIn = C.requirements.contains { $0.needsUser }
                    for try await event in try await events(C.method, body: body, signedIn: signedIn, lastEventID: nil) {
                        continuation.yield(try decode(C.Reply.self, from: Array(event.data.utf8)))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The signed-in user's events of `topics` (patterns like `todos.>`), from the durable log
    /// after `since` and then live. A dropped connection, or the stream's lifetime ending on
    /// appd, is resumed from the last event's sequence number (`Last-Event-ID`): no gap and no
    /// repeat. Errors that a retry cannot fix (not signed in, bad topics) end the stream.
    public func subscribe(topics: [String], since: Int64? = nil) -> AsyncThrowingStream<SubscribedEvent, any Error> {
        AsyncThrowingStream { continuation in
            // Unstructured: the stream's producer (AsyncThrowingStream's builder is synchronous); cancelled when the consumer stops.
            let task = Task {
                var last = since
                var attempt = 0
                while !Task.isCancelled {
                    do {
                        let body = try encode(BusContract.Subscribe(topics: topics, since: since))
                        let resumeAfter = last.map(String.init)
                        for try await event in try await events(BusContract.Subscribe.method, body: body, signedIn: true, lastEventID: resumeAfter) {
                            let delivered = try decode(SubscribedEvent.self, from: Array(event.data.utf8))
                            if let seq = delivered.seq { last = seq }
                            attempt = 0
                            continuation.yield(delivered)
                        }
                    } catch let error as AppdClientError {
                        // The connection broke, or appd answered busy: resume after a pause.
                        guard error.isWorthRetrying else { return continuation.finish(throwing: error) }
                    } catch let error as URLError where error.code != .cancelled {
                        // The network went away: resume when it is back.
                    } catch AuthError.sessionExpired {
                        // The access token expired while the stream ran: resume with a refreshed one.
                    } catch {
                        return continuation.finish(throwing: error)
                    }
                    attempt += 1
                    do { try await Task.sleep(for: retry.delay(attempt: attempt, retryAfter: nil)) } catch { break }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The server-sent events of one streaming call: each `reply` event; an `error` event is
    /// thrown as its typed error. A 401 before the stream starts refreshes the session once.
    func events(_ method: String, body: [UInt8], signedIn: Bool, lastEventID: String?) async throws -> AsyncThrowingStream<ServerSentEvent, any Error> {
        var refreshed = false
        while true {
            let token = signedIn ? try await sessions.accessToken(refresh) : nil
            var request = try request(method, body: body, token: token, idempotencyKey: nil, accept: "text/event-stream")
            if let lastEventID { request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
            let opened = try await open(request)
            switch opened {
            case .events(let stream): return stream
            case .refused(let status, let json):
                if status == 401, let token, !refreshed {
                    refreshed = true
                    _ = try await sessions.refreshed(replacing: token, refresh)
                    continue
                }
                throw WireErrors.error(status: status, body: json)
            }
        }
    }

    enum Opened: Sendable {
        case events(AsyncThrowingStream<ServerSentEvent, any Error>)
        case refused(status: Int, JSONValue?)
    }

    /// Starts the request; returns once its head arrived: the events, or the refusal.
    private func open(_ request: URLRequest) async throws -> Opened {
        let (events, feed) = AsyncThrowingStream<ServerSentEvent, any Error>.makeStream()
        let head = OneShot<Opened>()
        let status = Locked(0)
        let connection = EventStreamRequest(request: request, configuration: configuration) { update in
            switch update {
            case .head(let code, _):
                status.withLock { $0 = code }
                if code == 200 { head.resolve(.success(.events(events))) }
            case .event(let event) where event.event == "error":
                let json = try? JSONParser.parse(Array(event.data.utf8))
                feed.finish(throwing: WireErrors.error(status: 200, body: json))
            case .event(let event) where event.event == "reply": feed.yield(event)
            case .event: break
            case .body(let bytes): head.resolve(.success(.refused(status: status.withLock { $0 }, try? JSONParser.parse(bytes))))
            case .end(let error):
                let failure = error.map { AppdClientError.transport("\($0)") } ?? AppdClientError.transport("the stream ended")
                head.resolve(.failure(failure))
                // A stream that ends by itself (a chat reply's last message) ends cleanly.
                if let error, (error as? URLError)?.code != .cancelled { feed.finish(throwing: AppdClientError.transport("\(error)")) } else { feed.finish() }
            }
        }
        feed.onTermination = { _ in connection.cancel() }
        connection.start()
        return try await withTaskCancellationHandler {
            try await head.value
        } onCancel: {
            connection.cancel()
        }
    }
}

extension AppdClientError {
    /// A broken connection or a busy server: a subscription resumes after it.
    var isWorthRetrying: Bool {
        switch self {
        case .transport: true
        case .server(let status, let name, _): status == 429 || status == 503 || status == 504 || name == "io.appd.Bus.StreamLifetimeEnded"
        case .unexpectedReply, .notSignedIn: false
        }
    }
}

/// A value set once, awaited by one task.
final class OneShot<Value: Sendable>: @unchecked Sendable {  // safe: every field is read and written under `lock`
    private let lock = NSLock()
    private var result: Result<Value, any Error>?
    private var waiter: CheckedContinuation<Value, any Error>?

    func resolve(_ outcome: Result<Value, any Error>) {
        let waiting: CheckedContinuation<Value, any Error>? = lock.withLock {
            guard result == nil else { return nil }
            result = outcome
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume(with: outcome)
    }

    var value: Value {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<Value, any Error>? = lock.withLock {
                    if result == nil { waiter = continuation }
                    return result
                }
                if let ready { continuation.resume(with: ready) }
            }
        }
    }
}
