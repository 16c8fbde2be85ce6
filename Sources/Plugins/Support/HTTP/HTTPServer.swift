import Bus
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The head of a request the server reads: how much body follows.
public protocol HTTPRequestHead: Sendable {
    var contentLength: Int { get }
    var expectsContinue: Bool { get }
}

/// A JSON response; the connection closes after it.
public struct HTTPResponse: Error, Sendable, Equatable {
    public var status: Int
    public var body: JSONValue
    public init(status: Int, body: JSONValue) {
        self.status = status
        self.body = body
    }

    static let reasons = [
        200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 411: "Length Required",
        413: "Payload Too Large", 431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable",
    ]

    public var bytes: [UInt8] {
        let payload = JSONWriter.bytes(body)
        var head = "HTTP/1.1 \(status) \(Self.reasons[status] ?? "Error")\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\n"
        if status == 503 { head += "Retry-After: 1\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + payload
    }
}

/// Bounds of an `HTTPServer`.
public struct HTTPServerLimits: Sendable {
    /// The request head (request line and headers) must fit in this.
    public var maxHeadBytes = 16 * 1024
    /// Connections reading their request at once; one more displaces the one reading longest,
    /// so slow clients (slowloris) can never keep a real request out.
    public var maxReading = 64
    /// Requests being handled at once; one more is answered 503.
    public var maxHandling = 16
    /// The whole request (head and body) must arrive within this.
    public var requestTimeout: Duration = .seconds(10)
    /// A response must be taken by the client within this.
    public var writeTimeout: Duration = .seconds(10)
    /// How long `run` waits, when cancelled, for requests being handled.
    public var drainTimeout: Duration = .seconds(5)
    public init() {}
}

/// An HTTP/1.1 server on an `EventLoop`: one request per connection, non-blocking reads and
/// writes on the loop thread, the handler in a task. A request is read whole (head parsed by
/// `parseHead`, then `contentLength` bytes of body) before the handler sees it.
public final class HTTPServer<Head: HTTPRequestHead>: Sendable {
    /// Checks a request head (everything before the blank line); a failure is answered as is.
    public typealias ParseHead = @Sendable (ArraySlice<UInt8>) -> Result<Head, HTTPResponse>
    public typealias Handler = @Sendable (Head, [UInt8]) async -> HTTPResponse

    private let listenFD: Int32
    private let loop: EventLoop
    private let limits: HTTPServerLimits
    private let logger: Logger
    private let parseHead: ParseHead
    private let handler: Handler
    private let connections = Mutex<[Int32: HTTPServerConnection<Head>]>([:])
    private let handling = Atomic<Int>(0)

    /// Serves on `listenFD` (a listening TCP socket; the server closes it).
    public init(name: String, listenFD: Int32, limits: HTTPServerLimits, logger: Logger, parseHead: @escaping ParseHead, handler: @escaping Handler) throws(SocketError) {
        self.listenFD = listenFD
        self.loop = try EventLoop(name: name)
        self.limits = limits
        self.logger = logger
        self.parseHead = parseHead
        self.handler = handler
    }

    /// Serves until shut down (gracefully, or cancelled); then stops accepting, lets requests being handled finish (up
    /// to `drainTimeout`), closes every connection and returns.
    public func run() async {
        _ = appd_set_nonblocking(listenFD)
        loop.add(listenFD, events: EventLoop.readable) { [self] _, _ in acceptAll() }
        loop.onTick { [self] now in expire(now) }
        loop.start()
        await gracefulShutdown()
        loop.remove(listenFD)
        close(listenFD)
        // Requests being handled, and responses being written, finish (bounded).
        let until = ContinuousClock.now.advanced(by: limits.drainTimeout)
        while connections.withLock({ $0.values.contains { !$0.isReading } }) && ContinuousClock.now < until {
            await sleepIgnoringCancellation(for: .milliseconds(10))
        }
        for connection in connections.withLock({ Array($0.values) }) { shutdown(connection.fd, Int32(SHUT_RDWR)) }
        loop.wakeUp()
        await loop.stop { [self] in connections.withLock { $0.isEmpty } }
    }

    // MARK: On the loop

    private func acceptAll() {
        while true {
            let fd = appd_accept(listenFD)
            guard fd >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let connection = HTTPServerConnection<Head>(fd: fd)
            let displaced = connections.withLock { table -> HTTPServerConnection<Head>? in
                table[fd] = connection
                let reading = table.values.filter(\.isReading)
                guard reading.count > limits.maxReading else { return nil }
                return reading.min { $0.acceptedAt < $1.acceptedAt }
            }
            if let displaced { finish(displaced) }
            loop.add(fd, events: EventLoop.readable) { [self] readiness, scratch in ready(connection, readiness, &scratch) }
        }
    }

    private func ready(_ connection: HTTPServerConnection<Head>, _ readiness: EventLoop.Readiness, _ scratch: inout [UInt8]) {
        if readiness.writable { flush(connection) }
        if readiness.readable || readiness.hangup { read(connection, &scratch) }
    }

    private func read(_ connection: HTTPServerConnection<Head>, _ scratch: inout [UInt8]) {
        var bytes: [UInt8] = []
        var ended = false
        while true {
            let n = scratch.withUnsafeMutableBytes { Glibc.read(connection.fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes += scratch[0..<n]
                continue
            }
            if n < 0 && errno == EINTR { continue }
            ended = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
            break
        }
        switch connection.received(bytes, maxHeadBytes: limits.maxHeadBytes, parseHead: parseHead) {
        case .more:
            if ended { finish(connection) }
        case .sendContinue:
            _ = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8).withUnsafeBytes { send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if ended { finish(connection) }
        case .respond(let response):
            respond(connection, response)
        case .complete(let head, let body):
            loop.modify(connection.fd, events: 0)
            guard handling.add(1, ordering: .acquiringAndReleasing).newValue <= limits.maxHandling else {
                handling.subtract(1, ordering: .acquiringAndReleasing)
                return respond(connection, HTTPResponse(status: 503, body: ["error": "Busy", "reason": "too many requests in flight; retry"]))
            }
            let handler = self.handler
            Task {
                let response = await handler(head, body)
                respond(connection, response)
                handling.subtract(1, ordering: .acquiringAndReleasing)
            }
        case .ignored:
            break
        }
    }

    /// Starts writing `response` (from any thread); the loop finishes it.
    private func respond(_ connection: HTTPServerConnection<Head>, _ response: HTTPResponse) {
        guard connection.startWriting(response.bytes) else { return }
        flush(connection)
    }

    private func flush(_ connection: HTTPServerConnection<Head>) {
        switch connection.write() {
        case .done, .failed: finish(connection)
        case .blocked: loop.modify(connection.fd, events: EventLoop.writable)
        case .notWriting: break
        }
    }

    /// Closes the connection once (it leaves the loop before its fd number can be reused).
    private func finish(_ connection: HTTPServerConnection<Head>) {
        guard connection.markClosed() else { return }
        loop.remove(connection.fd)
        close(connection.fd)
        _ = connections.withLock { $0.removeValue(forKey: connection.fd) }
    }

    /// Answers 408 to a request that did not arrive in time; drops a client that does not read
    /// its response.
    private func expire(_ now: ContinuousClock.Instant) {
        for connection in connections.withLock({ Array($0.values) }) {
            switch connection.overdue(now: now, limits: limits) {
            case .reading: respond(connection, HTTPResponse(status: 408, body: ["error": "RequestTimeout", "reason": "the request did not arrive whole in time"]))
            case .writing: finish(connection)
            case nil: break
            }
        }
    }
}

/// One connection's state; every change happens under its lock, every syscall outside it.
final class HTTPServerConnection<Head: HTTPRequestHead>: Sendable {
    enum Phase {
        case reading(buffer: [UInt8], head: (Head, bodyStart: Int)?)
        case handling
        case writing(bytes: [UInt8], offset: Int, since: ContinuousClock.Instant)
        case closed
    }
    enum Received {
        case more
        case sendContinue
        case respond(HTTPResponse)
        case complete(Head, [UInt8])
        case ignored
    }
    enum Written { case done, blocked, failed, notWriting }
    enum Overdue { case reading, writing }

    let fd: Int32
    let acceptedAt = ContinuousClock.now
    private let phase = Mutex<Phase>(.reading(buffer: [], head: nil))

    init(fd: Int32) { self.fd = fd }

    var isReading: Bool {
        phase.withLock { if case .reading = $0 { true } else { false } }
    }

    /// Adds bytes read; says what the request needs next.
    func received(_ bytes: [UInt8], maxHeadBytes: Int, parseHead: (ArraySlice<UInt8>) -> Result<Head, HTTPResponse>) -> Received {
        phase.withLock { p -> Received in
            guard case .reading(var buffer, var head) = p else { return .ignored }
            buffer += bytes
            var continuing = false
            if head == nil {
                let tooLarge = Received.respond(
                    HTTPResponse(status: 431, body: ["error": "HeadersTooLarge", "reason": .string("the request head is over \(maxHeadBytes / 1024) KiB")]))
                guard let end = buffer.firstRange(of: [13, 10, 13, 10])?.lowerBound else {
                    p = .reading(buffer: buffer, head: nil)
                    return buffer.count > maxHeadBytes ? tooLarge : .more
                }
                guard end <= maxHeadBytes else { return tooLarge }
                switch parseHead(buffer[0..<end]) {
                case .failure(let refusal): return .respond(refusal)
                case .success(let parsed):
                    head = (parsed, end + 4)
                    continuing = parsed.expectsContinue
                }
            }
            guard let (parsed, bodyStart) = head else { return .more }
            let body = buffer.count - bodyStart
            if body > parsed.contentLength {
                return .respond(HTTPResponse(status: 400, body: ["error": "BadRequest", "reason": "more bytes than Content-Length"]))
            }
            guard body == parsed.contentLength else {
                p = .reading(buffer: buffer, head: head)
                return continuing ? .sendContinue : .more
            }
            p = .handling
            return .complete(parsed, Array(buffer[bodyStart...]))
        }
    }

    /// False when the connection is already answering or closed.
    func startWriting(_ bytes: [UInt8]) -> Bool {
        phase.withLock { p in
            switch p {
            case .reading, .handling:
                p = .writing(bytes: bytes, offset: 0, since: .now)
                return true
            case .writing, .closed:
                return false
            }
        }
    }

    /// Writes what the socket takes now. The send is outside the lock: only the loop thread,
    /// or the one thread that started writing, gets here with bytes left, one at a time.
    func write() -> Written {
        guard case .writing(let bytes, let offset, let since) = phase.withLock({ $0 }) else { return .notWriting }
        var sent = offset
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                phase.withLock { p in if case .writing = p { p = .writing(bytes: bytes, offset: sent, since: since) } }
                return .blocked
            } else {
                return .failed
            }
        }
        return .done
    }

    /// True the first time: the caller closes the fd.
    func markClosed() -> Bool {
        phase.withLock { p in
            if case .closed = p { return false }
            p = .closed
            return true
        }
    }

    func overdue(now: ContinuousClock.Instant, limits: HTTPServerLimits) -> Overdue? {
        phase.withLock { p in
            switch p {
            case .reading: now - acceptedAt > limits.requestTimeout ? .reading : nil
            case .writing(_, _, let since): now - since > limits.writeTimeout ? .writing : nil
            case .handling, .closed: nil
            }
        }
    }
}
