// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization
import Runtime

/// One HTTP/1.1 connection: the request parser and the response state machine on a
/// `SocketChannel` (which owns the fd and the bytes waiting to be written). Every change to
/// the protocol state happens under its lock; every syscall through the channel, on the loop.
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
        /// The response is whole in the channel (a stream has ended).
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

    let channel: SocketChannel
    let peerAddress: String
    private let state: Mutex<State>

    init(channel: SocketChannel, peerAddress: String) {
        self.channel = channel
        self.peerAddress = peerAddress
        state = Mutex(State(since: .now))
    }

    var fd: Int32 { channel.fd }

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
                switch HTTPServerRequest.parse(head: s.input[0..<end], maxBodyBytes: limits.largestBodyBytes) {
                case .failure(let refusal): return .refuse(refusal.response)
                case .success(let request) where !limits.largeBodies.isEmpty && request.contentLength > limits.maxBodyBytes(forPath: request.path):
                    let bound = limits.maxBodyBytes(forPath: request.path)
                    return .refuse(HTTPResponse.refusal(413, "PayloadTooLarge", reason: "the body is over \(bound) bytes"))
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

    /// Queues a response's head, and its body unless `streamed` (its chunks follow). False
    /// when the connection is closed.
    func startResponse(_ response: HTTPResponse, streamed: Bool, serverClosing: Bool) -> Bool {
        let shape = state.withLock { s -> (headOnly: Bool, keepAlive: Bool)? in
            guard s.phase == .reading || s.phase == .handling else { return nil }
            s.refusal = s.phase == .reading
            // A HEAD is answered with the head a GET would get (its Content-Length too), no body.
            let headOnly = s.answeringHead && s.phase == .handling
            s.keepAlive = s.keepAlive && !response.closes && !s.peerClosed && !serverClosing && s.phase == .handling
            s.phase = .responding(streaming: streamed && !headOnly)
            // Complete before the bytes are queued: the send that drains them ends the response.
            s.responseComplete = !streamed || headOnly
            return (headOnly, s.keepAlive)
        }
        guard let shape else { return false }
        if streamed { return channel.write(response.head(keepAlive: shape.keepAlive, chunked: true)) != nil }
        return channel.write { response.write(into: &$0, keepAlive: shape.keepAlive, headOnly: shape.headOnly) } != nil
    }

    /// Ends a streamed response with the last chunk (loop thread, so no send of an earlier
    /// chunk can end the response before this one is queued).
    func finishStream() {
        let streaming = state.withLock { s -> Bool in
            guard case .responding(streaming: true) = s.phase else { return false }
            s.responseComplete = true
            return true
        }
        if streaming { channel.write(Self.lastChunk) }
    }
    static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    enum Sent {
        case nothing
        /// The response is sent and the connection is reading again.
        case readingAgain
        /// The response is sent and the connection must close.
        case close
        /// The refusal is sent: shut the write side and linger.
        case linger
    }

    /// The channel has sent everything queued (loop thread): what follows when that was a
    /// whole response.
    func sent() -> Sent {
        state.withLock { s -> Sent in
            guard case .responding = s.phase, s.responseComplete else { return .nothing }
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

    /// The channel is closed: cancels a handler still running.
    func markClosed() {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.phase = .closed
            defer { s.task = nil }
            return s.task
        }
        task?.cancel()
    }

    enum Overdue { case idle, request, write }

    func overdue(now: ContinuousClock.Instant, limits: HTTPServerLimits) -> Overdue? {
        let phase = state.withLock { s -> Overdue? in
            switch s.phase {
            case .reading where s.requestStarted: now - s.since > limits.requestTimeout ? .request : nil
            case .reading: now - s.since > limits.keepAliveTimeout ? .idle : nil
            case .responding: .write
            case .lingering: now - s.since > limits.lingerTimeout ? .idle : nil
            case .handling, .closed: nil
            }
        }
        guard phase == .write else { return phase }
        return channel.writeStalled(now: now, limit: limits.writeTimeout) ? .write : nil
    }
}
