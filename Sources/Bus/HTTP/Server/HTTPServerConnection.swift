import BusCore
import Synchronization
import Runtime

/// One connection's state; every change happens under its lock, every syscall outside it
/// (on the server's loop thread).
final class HTTPServerConnection: Sendable {
    enum Phase: Equatable {
        /// Reading a request, or idle between two (keep-alive).
        case reading
        /// The handler runs; nothing is read (a pipelined request waits in the kernel).
        case handling
        /// The response is being written (whole, or streamed while the handler writes it).
        case responding(streaming: Bool)
        /// A request was refused before it was read whole: the answer is out and the write side
        /// shut; what the client still sends is read and dropped for a moment, so closing does
        /// not reset the connection before the client has read the answer (nginx's lingering close).
        case lingering
        case closed
    }

    struct State {
        var phase = Phase.reading
        /// Bytes read and not yet part of a request (the start of the next one).
        var input: [UInt8] = []
        var head: (request: HTTPServerRequest, bodyStart: Int)?
        /// When the connection became idle (reading, nothing received yet), or when the
        /// request's first byte arrived.
        var since: ContinuousClock.Instant
        var requestStarted = false
        /// Response bytes not yet sent.
        var output: [UInt8] = []
        var lastProgress: ContinuousClock.Instant
        /// The response is whole in `output` (a stream has ended).
        var responseComplete = false
        var keepAlive = true
        /// The response refuses a request that was not read whole (the client may still be sending).
        var refusal = false
        /// The client closed its side.
        var peerClosed = false
        /// The request being answered is a HEAD: its response goes out without a body.
        var answeringHead = false
        var task: Task<Void, Never>?
    }

    enum Parsed {
        case more
        case sendContinue
        case refuse(HTTPResponse)
        case complete(HTTPServerRequest, [UInt8])
    }

    let fd: Int32
    let peerAddress: String
    private let state: Mutex<State>
    /// What the loop watches the fd for (changed on the loop thread only).
    let watchedEvents = Atomic<UInt32>(EventLoop.readable)

    init(fd: Int32, peerAddress: String) {
        self.fd = fd
        self.peerAddress = peerAddress
        let now = ContinuousClock.now
        state = Mutex(State(since: now, lastProgress: now))
    }

    var phase: Phase { state.withLock { $0.phase } }

    /// When the connection started reading (for displacing the longest reader).
    var readingSince: ContinuousClock.Instant? {
        state.withLock { $0.phase == .reading ? $0.since : nil }
    }

    /// The client closed its side (a read returned end of file).
    func peerClosedItsSide() {
        state.withLock { s in
            if s.phase != .closed { s.peerClosed = true }
        }
    }

    /// Adds bytes read.
    func received(_ bytes: ArraySlice<UInt8>) {
        state.withLock { s in
            // Lingering: what arrives is dropped.
            guard s.phase != .closed, s.phase != .lingering else { return }
            if s.phase == .reading && !s.requestStarted && !bytes.isEmpty {
                s.requestStarted = true
                s.since = .now
            }
            s.input += bytes
        }
    }

    var peerClosed: Bool { state.withLock { $0.peerClosed } }
    var answeringHead: Bool { state.withLock { $0.answeringHead } }
    var unreadInput: Int { state.withLock { $0.input.count } }

    /// Tries to take one whole request from the input (in the reading phase).
    func nextRequest(limits: HTTPServerLimits) -> Parsed {
        state.withLock { s -> Parsed in
            guard s.phase == .reading else { return .more }
            var continuing = false
            if s.head == nil {
                // Built only when needed: this runs for every request.
                func tooLarge() -> Parsed {
                    .refuse(HTTPResponse.refusal(431, "HeadersTooLarge", reason: "the request head is over \(limits.maxHeadBytes / 1024) KiB"))
                }
                guard let end = Self.headEnd(in: s.input) else {
                    return s.input.count > limits.maxHeadBytes ? tooLarge() : .more
                }
                guard end <= limits.maxHeadBytes else { return tooLarge() }
                switch HTTPServerRequest.parse(head: s.input[0..<end], maxBodyBytes: limits.maxBodyBytes) {
                case .failure(let refusal): return .refuse(refusal.response)
                case .success(var request):
                    request.peerAddress = peerAddress
                    s.head = (request, end + 4)
                    continuing = request.expectsContinue && s.input.count == end + 4 && request.contentLength > 0
                }
            }
            guard let (request, bodyStart) = s.head else { return .more }
            guard s.input.count - bodyStart >= request.contentLength else { return continuing ? .sendContinue : .more }
            let body = Array(s.input[bodyStart..<bodyStart + request.contentLength])
            s.input.removeFirst(bodyStart + request.contentLength)
            s.head = nil
            s.phase = .handling
            s.keepAlive = request.keepAlive
            s.answeringHead = request.method == "HEAD"
            return .complete(request, body)
        }
    }

    /// Where the blank line that ends a request head starts (the first CR LF CR LF).
    static func headEnd(in bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { buffer -> Int? in
            guard buffer.count >= 4 else { return nil }
            var i = 0
            while i <= buffer.count - 4 {
                if buffer[i + 3] != 10 {
                    // The LF that ends the marker is not here: skip ahead past it.
                    i += buffer[i + 3] == 13 ? 1 : 4
                    continue
                }
                if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 { return i }
                i += 1
            }
            return nil
        }
    }

    func setTask(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { s -> Bool in
            s.task = task
            return s.phase == .closed
        }
        if cancelNow { task.cancel() }
    }

    /// Queues a response's head (and body, when whole). False when the connection is closed.
    func startResponse(_ response: HTTPResponse, serverClosing: Bool) -> Bool {
        state.withLock { s in
            guard s.phase == .reading || s.phase == .handling else { return false }
            s.refusal = s.phase == .reading
            // A HEAD is answered with the head a GET would get (its Content-Length too), no body.
            let headOnly = s.answeringHead && s.phase == .handling
            s.keepAlive = s.keepAlive && !response.closes && !s.peerClosed && !serverClosing && s.phase == .handling
            s.phase = .responding(streaming: response.stream != nil && !headOnly)
            let bytes = response.stream == nil && !headOnly ? response.bytes(keepAlive: s.keepAlive) : response.head(keepAlive: s.keepAlive)
            if s.output.isEmpty { s.output = bytes } else { s.output += bytes }
            s.responseComplete = response.stream == nil || headOnly
            s.lastProgress = .now
            return true
        }
    }

    /// Appends streamed bytes; returns how many are unsent, or nil when the connection is closed.
    func append(_ bytes: [UInt8], completing: Bool = false) -> Int? {
        state.withLock { s in
            guard case .responding = s.phase else { return nil }
            s.output += bytes
            if completing { s.responseComplete = true }
            return s.output.count
        }
    }

    /// Unsent bytes, or nil once closed.
    var pendingOutput: Int? {
        state.withLock { s in s.phase == .closed ? nil : s.output.count }
    }

    enum Flushed {
        case nothing
        /// Bytes are left; wait for the socket to be writable.
        case blocked(streaming: Bool)
        /// The response is sent and the connection is reading again.
        case readingAgain
        /// The response is sent and the connection must close.
        case close
        /// The refusal is sent: shut the write side and linger.
        case linger
        case failed
    }

    /// Writes what the socket takes now. Only the loop thread calls it.
    func flush() -> Flushed {
        let output = state.withLock { s -> [UInt8]? in
            guard case .responding = s.phase else { return nil }
            return s.output
        }
        guard let output else { return .nothing }
        var sent = 0
        var failed = false
        while sent < output.count {
            let n = output[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                failed = true
                break
            }
        }
        if failed { return .failed }
        return state.withLock { s -> Flushed in
            guard case .responding(let streaming) = s.phase else { return .nothing }
            if sent > 0 {
                // All sent (the usual case): drop the buffer rather than shift a copy of it.
                if sent == s.output.count { s.output = [] } else { s.output.removeFirst(sent) }
                s.lastProgress = .now
            }
            guard s.output.isEmpty, s.responseComplete else { return s.output.isEmpty ? .nothing : .blocked(streaming: streaming) }
            guard s.keepAlive else {
                guard s.refusal && !s.peerClosed else { return .close }
                s.phase = .lingering
                s.since = .now
                return .linger
            }
            s.phase = .reading
            s.task = nil
            s.answeringHead = false
            s.requestStarted = !s.input.isEmpty
            s.since = .now
            return .readingAgain
        }
    }

    /// True the first time: the caller closes the fd. Cancels a handler still running.
    func markClosed() -> Bool {
        let (first, task) = state.withLock { s -> (Bool, Task<Void, Never>?) in
            if s.phase == .closed { return (false, nil) }
            s.phase = .closed
            defer { s.task = nil }
            return (true, s.task)
        }
        task?.cancel()
        return first
    }

    enum Overdue { case idle, request, write }

    func overdue(now: ContinuousClock.Instant, limits: HTTPServerLimits) -> Overdue? {
        state.withLock { s in
            switch s.phase {
            case .reading where s.requestStarted: now - s.since > limits.requestTimeout ? .request : nil
            case .reading: now - s.since > limits.keepAliveTimeout ? .idle : nil
            case .responding where !s.output.isEmpty: now - s.lastProgress > limits.writeTimeout ? .write : nil
            case .lingering: now - s.since > limits.lingerTimeout ? .idle : nil
            case .responding, .handling, .closed: nil
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
