// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One streaming HTTP request read as server-sent events as they arrive (URLSession's data
/// delegate; `bytes(for:)` is not in every Foundation). The session is its own and is
/// invalidated when the stream ends or is cancelled, so nothing outlives the stream.
/// (Sendable by hand: its mutable state is read and written under `lock`; URLSession calls the delegate on its own queue.)
final class EventStreamRequest: NSObject, URLSessionDataDelegate, @unchecked Sendable {  // safe: state under `lock`
    /// What the stream reports, in order: the response's head, each event, the end.
    enum Update: Sendable {
        case head(status: Int, headers: [String: String])
        case event(ServerSentEvent)
        /// A response that is not an event stream: its body (an error).
        case body([UInt8])
        case end((any Error)?)
    }

    private let lock = NSLock()
    private var parser = ServerSentEventParser()
    private var isEventStream = false
    /// Whether a response head arrived (without one, the request failed on the way).
    private var answered = false
    private var body: [UInt8] = []
    private var finished = false
    private let onUpdate: @Sendable (Update) -> Void
    private var session: URLSession?
    private var task: URLSessionDataTask?
    /// An error body is kept up to this size.
    private let maxErrorBody = 64 << 10

    init(request: URLRequest, configuration: URLSessionConfiguration, onUpdate: @escaping @Sendable (Update) -> Void) {
        self.onUpdate = onUpdate
        super.init()
        // The client's configuration: on Linux without a cache, so cancelling cannot trap.
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        self.session = session
        task = session.dataTask(with: request)
    }

    func start() { lock.withLock { task }?.resume() }

    /// Ends the stream from the client's side (the consumer stopped): the connection closes.
    /// A task that completed is not cancelled again (Foundation no longer knows it).
    func cancel() {
        let (task, session) = lock.withLock {
            defer { (self.task, self.session) = (nil, nil) }
            return (self.task, self.session)
        }
        task?.cancel()
        session?.invalidateAndCancel()
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 0
        var headers: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        lock.withLock {
            answered = true
            isEventStream = status == 200 && (headers["content-type"] ?? "").hasPrefix("text/event-stream")
        }
        onUpdate(.head(status: status, headers: headers))
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let outcome: Result<[ServerSentEvent], any Error> = lock.withLock {
            guard isEventStream else {
                if body.count < maxErrorBody { body += data.prefix(maxErrorBody - body.count) }
                return .success([])
            }
            return Result { try parser.feed(data) }
        }
        switch outcome {
        case .success(let events): for event in events { onUpdate(.event(event)) }
        case .failure(let error):
            finish(error)
            cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (stream, answered, body) = lock.withLock {
            // Completed: nothing is left to cancel (the session is invalidated below).
            (self.task, self.session) = (nil, nil)
            return (isEventStream, self.answered, self.body)
        }
        // An answer that is not a stream (an error) is handed over whole; no answer at all is
        // the transport's failure, reported by the end alone.
        if answered && !stream { onUpdate(.body(body)) }
        finish(error)
        session.finishTasksAndInvalidate()
    }

    private func finish(_ error: (any Error)?) {
        let first = lock.withLock {
            defer { finished = true }
            return !finished
        }
        if first { onUpdate(.end(error)) }
    }
}
