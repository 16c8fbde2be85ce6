// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Runtime

/// An HTTP/1.1 server on an `EventLoop`: keep-alive connections, non-blocking reads and
/// writes on the loop thread, each request's handler in a task that prefers the loop's
/// executor (a cheap request is read, handled and answered on one thread). A request is read
/// whole (head, then `contentLength` bytes of body) before the handler sees it; its response
/// is written whole, or streamed in chunks by the work that produces them (`HTTPResponder`,
/// for server-sent events).
/// A client that goes away cancels the stream written to it.
public final class HTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPServerRequest, [UInt8]) async -> HTTPResponse
    /// A handler that answers on the loop thread when it can (`HTTPHandling.now`: no task),
    /// and says what to run in a task otherwise.
    public typealias Dispatch = @Sendable (HTTPServerRequest, [UInt8]) -> HTTPHandling

    private let listenFD: Int32
    private let loop: EventLoop
    let limits: HTTPServerLimits
    private let logger: Logger
    private let dispatch: Dispatch
    private let connections = ConnectionTable<HTTPServerConnection>()
    private let handling = Atomic<Int>(0)
    private let streaming = Atomic<Int>(0)
    private let closing = Atomic<Bool>(false)

    /// Serves on `listenFD` (a listening TCP socket; the server closes it); every request's
    /// handler runs in a task.
    public convenience init(name: String, listenFD: Int32, limits: HTTPServerLimits, logger: Logger, handler: @escaping Handler) throws(SocketError) {
        try self.init(name: name, listenFD: listenFD, limits: limits, logger: logger) { request, body in .later { await handler(request, body) } }
    }

    /// Serves on `listenFD`; `dispatch` runs on the loop thread for each request and answers
    /// it there, or hands the server the work to run in a task.
    public init(name: String, listenFD: Int32, limits: HTTPServerLimits, logger: Logger, dispatch: @escaping Dispatch) throws(SocketError) {
        self.listenFD = listenFD
        self.loop = try EventLoop(name: name)
        self.limits = limits
        self.logger = logger
        self.dispatch = dispatch
    }

    /// Open connections and streams, for metrics.
    public var stats: (connections: Int, streams: Int) {
        (connections.count, streaming.load(ordering: .relaxed))
    }

    /// Serves until shut down (gracefully, or cancelled); then stops accepting, closes idle
    /// connections, ends streams, lets requests being handled finish (up to `drainTimeout`),
    /// closes every connection and returns.
    public func run() async {
        _ = appd_set_nonblocking(listenFD)
        loop.add(listenFD, events: EventLoop.readable) { [self] _, _ in acceptAll() }
        loop.onTick { [self] now in expire(now) }
        loop.start()
        await gracefulShutdown()
        closing.store(true, ordering: .releasing)
        loop.execute { [self] in
            loop.remove(listenFD)
            close(listenFD)
            for connection in connections.all {
                switch connection.phase {
                case .reading where connection.unreadInput == 0, .responding(streaming: true): finish(connection)
                default: break
                }
            }
        }
        await ConnectionTable<HTTPServerConnection>.drain(until: .now.advanced(by: limits.drainTimeout)) { [connections] in connections.isEmpty }
        loop.execute { [self] in
            for connection in connections.all { finish(connection) }
        }
        await loop.stop { [connections] in connections.isEmpty }
    }

    // MARK: On the loop

    private func acceptAll() {
        ConnectionTable<HTTPServerConnection>.acceptAll(listenFD, logger: logger) { fd in
            var address = [CChar](repeating: 0, count: 64)
            let peer =
                appd_tcp_peer(fd, &address, Int32(address.count)) == 0
                ? String(decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
            let channel = SocketChannel(fd: fd, loop: loop, highWater: limits.streamBufferBytes, lowWater: limits.streamBufferBytes / 2)
            let connection = HTTPServerConnection(channel: channel, peerAddress: peer)
            let (admitted, displaced) = connections.withTable { table -> (Bool, HTTPServerConnection?) in
                guard table.count < limits.maxConnections else { return (false, nil) }
                table[fd] = connection
                let reading = table.values.compactMap { c in c.readingSince.map { (c, $0) } }
                guard reading.count > limits.maxReading else { return (true, nil) }
                return (true, reading.min { $0.1 < $1.1 }?.0)
            }
            guard admitted else {
                SocketChannel.sendOnce(fd, HTTPResponse.refusal(503, "Busy", reason: "too many connections; retry").bytes(keepAlive: false))
                close(fd)
                return
            }
            if let displaced { finish(displaced) }
            channel.register(drained: { [weak self, weak connection] in
                if let self, let connection { sent(connection) }
            }) { [self] readiness, scratch in ready(connection, readiness, &scratch) }
        }
    }

    private func ready(_ connection: HTTPServerConnection, _ readiness: EventLoop.Readiness, _ scratch: inout [UInt8]) {
        if readiness.writable { connection.channel.flush() }
        if readiness.readable || readiness.hangup { read(connection, hangup: readiness.hangup, &scratch) }
        if connection.channel.lifecycle == .closing { finish(connection) }
    }

    private func read(_ connection: HTTPServerConnection, hangup: Bool, _ scratch: inout [UInt8]) {
        let end = connection.channel.read(into: &scratch, limit: limits.maxHeadBytes + limits.largestBodyBytes + 1, toEnd: hangup) { bytes in
            connection.received(bytes)
            return true
        }
        let ended = end != .open
        let failed = hangup || end == .failed
        if ended { connection.peerClosedItsSide() }
        switch connection.phase {
        case .reading:
            process(connection)
        case .responding(streaming: true):
            // A stream's client sends nothing more; it closing its side ends the stream.
            if ended || connection.unreadInput > limits.maxHeadBytes { finish(connection) }
        case .handling, .responding:
            // Reads stay watched while a request is handled (no two epoll changes per request);
            // a pipelined request waits in the buffer, up to one request's worth.
            if failed {
                // A reset: the response has nowhere to go.
                finish(connection)
            } else if ended || connection.unreadInput > limits.maxHeadBytes + limits.largestBodyBytes {
                // The client closed its side (it is answered, then the connection closes), or
                // sends too far ahead: stop reading until the response is out.
                connection.channel.watchReads(false)
            }
        case .lingering:
            if ended { finish(connection) }
        case .closed:
            break
        }
    }

    /// Takes the next request from what the connection has read, if it is whole.
    private func process(_ connection: HTTPServerConnection) {
        switch connection.nextRequest(limits: limits) {
        case .more:
            if connection.peerClosed { finish(connection) }
        case .sendContinue:
            connection.channel.write(Self.continueHead)
        case .refuse(let refusal):
            respond(connection, refusal)
        case .complete(let request, let body):
            let work: @Sendable (HTTPResponder) async -> Void
            switch dispatch(request, body) {
            case .now(let response) where response.stream == nil:
                // Answered here: no task.
                return respond(connection, response)
            case .now(let response): work = { await $0.deliver(response) }
            case .later(let later): work = { responder in await responder.deliver(later()) }
            case .responding(let body): work = body
            }
            guard handling.add(1, ordering: .acquiringAndReleasing).newValue <= limits.maxHandling else {
                handling.subtract(1, ordering: .acquiringAndReleasing)
                return respond(connection, Self.busy("too many requests in flight; retry"))
            }
            // The handler runs on this I/O thread (see EventLoopExecutor); deadline tasks too.
            let responder = HTTPResponder(connection: connection, server: self)
            let task = loop.task {
                await work(responder)
                responder.end()
            }
            responder.attach(task)
            connection.setTask(task)
        }
    }

    /// Takes one of the `maxStreams` places for a stream about to start on `connection`, before
    /// its response is decorated: false when they are all taken (the responder then answers
    /// `streamsBusy` instead, decorated, logged and counted as what it is). A HEAD takes none: it
    /// gets the stream's head and no body.
    func reserveStream(on connection: HTTPServerConnection?) -> Bool {
        guard let connection, !connection.answeringHead else { return true }
        guard streaming.add(1, ordering: .acquiringAndReleasing).newValue <= limits.maxStreams else {
            streaming.subtract(1, ordering: .acquiringAndReleasing)
            return false
        }
        return true
    }

    static var streamsBusy: HTTPResponse { busy("too many streams open; retry") }

    /// Starts a responder's response (from any thread): whole, or the head of a stream, whose
    /// place `reserveStream` took. The request stops counting as in flight; a stream counts as
    /// open until `endStream`. Returns what the responder may do next.
    func begin(_ response: HTTPResponse, streamed: Bool, on connection: HTTPServerConnection?) -> HTTPResponder.Phase {
        handling.subtract(1, ordering: .acquiringAndReleasing)
        guard let connection else { return .noBody }
        guard streamed else {
            respond(connection, response)
            return .whole
        }
        guard !connection.answeringHead else {
            // A HEAD gets the stream's head and no body.
            _ = connection.startResponse(response, streamed: true, serverClosing: closing.load(ordering: .acquiring))
            return .noBody
        }
        guard connection.startResponse(response, streamed: true, serverClosing: closing.load(ordering: .acquiring)) else {
            streaming.subtract(1, ordering: .acquiringAndReleasing)
            return .noBody
        }
        // Read while streaming: the client closing its side is how a stream learns it left.
        connection.channel.watchReads(true)
        return .streaming
    }

    /// A stream's work has returned: its last chunk goes out on the loop, after every chunk
    /// queued before it (see `finishStream`).
    func endStream(on connection: HTTPServerConnection) {
        streaming.subtract(1, ordering: .acquiringAndReleasing)
        loop.execute { connection.finishStream() }
    }

    static let continueHead: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// 503 for a server at a limit; the connection closes after it (shedding load).
    static func busy(_ reason: String) -> HTTPResponse {
        var response = HTTPResponse.refusal(503, "Busy", reason: reason)
        response.closes = true
        return response
    }

    /// Queues a chunk of a stream; above the stream buffer, waits until the client has read
    /// half of it (woken by the send that gets there).
    func enqueue(_ chunk: [UInt8], on connection: HTTPServerConnection) async throws(HTTPStreamClosed) {
        guard !Task.isCancelled, let pending = connection.channel.write(chunk) else { throw HTTPStreamClosed() }
        if pending > limits.streamBufferBytes, await !connection.channel.waitForReader() { throw HTTPStreamClosed() }
    }

    /// Queues `response` (from any thread); the loop sends it.
    private func respond(_ connection: HTTPServerConnection, _ response: HTTPResponse) {
        _ = connection.startResponse(response, streamed: false, serverClosing: closing.load(ordering: .acquiring))
    }

    /// The channel has sent everything queued (loop thread).
    private func sent(_ connection: HTTPServerConnection) {
        switch connection.sent() {
        case .nothing: break
        case .readingAgain:
            connection.channel.watchReads(true)
            // A pipelined request may already be here.
            if connection.unreadInput > 0 { process(connection) }
        case .linger:
            connection.channel.shutdownWrite()
            connection.channel.watchReads(true)
        case .close:
            finish(connection)
        }
    }

    /// Closes the connection once (it leaves the loop before its fd number can be reused).
    private func finish(_ connection: HTTPServerConnection) {
        guard connection.channel.close() else { return }
        connection.markClosed()
        connections.remove(connection.fd)
    }

    /// Answers 408 to a request that did not arrive in time; closes idle keep-alive
    /// connections and clients that do not read their response.
    private func expire(_ now: ContinuousClock.Instant) {
        for connection in connections.all {
            switch connection.overdue(now: now, limits: limits) {
            case .request: respond(connection, HTTPResponse.refusal(408, "RequestTimeout", reason: "the request did not arrive whole in time"))
            case .idle, .write: finish(connection)
            case nil: break
            }
        }
    }
}
