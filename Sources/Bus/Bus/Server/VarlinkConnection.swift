import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One client connection: the bytes read, the calls waiting, the replies not yet written.
///
/// Only the I/O thread reads and closes the fd; the connection's worker task writes replies
/// directly (under the lock, so a write never races a close). Calls are answered strictly in
/// order by one worker.
final class VarlinkConnection: Sendable {
    struct State {
        var reader: VarlinkFrameReader
        var calls: [VarlinkCall] = []
        var callsHead = 0
        var worker: CheckedContinuation<Void, Never>?
        var output: [UInt8] = []
        var outputStart = 0
        var wantsWrite = false
        var readPaused = false
        var inputEnded = false
        /// Set when the client broke the protocol: answer what was queued, then close.
        var protocolError: String?
        var closing = false
        var closed = false
        var busy = false
        /// The call being answered is a stream (`more`): shutdown ends it rather than waiting.
        var streaming = false
        var workerDone = false
        var sawMessage = false
        var registeredEvents: UInt32 = 0
        /// The worker, paused in the middle of a stream until the client reads.
        var streamWriter: CheckedContinuation<Bool, Never>?
        var streamPausedAt: ContinuousClock.Instant?
        /// When the client last took some of its output while a stream was paused.
        var lastDrain = ContinuousClock.now

        var queued: Int { calls.count - callsHead }
    }

    let fd: Int32
    let loop: EventLoop
    let context: ConnectionContext
    let acceptedAt = ContinuousClock.now
    let limits: ServerLimits
    let logger: Logger
    let state: Mutex<State>

    init(fd: Int32, loop: EventLoop, context: ConnectionContext, limits: ServerLimits, logger: Logger) {
        self.fd = fd
        self.loop = loop
        self.context = context
        self.limits = limits
        self.logger = logger
        self.state = Mutex(State(reader: VarlinkFrameReader(maxBytes: limits.maxMessageBytes)))
    }

    var peerDescription: String {
        context.peer.map { "uid=\($0.uid) pid=\($0.pid)" } ?? "unknown"
    }

    // MARK: Interest

    /// Registers or updates the fd's epoll events to match the state. Call with the lock held.
    func updateInterest(_ s: inout State) {
        guard !s.closed else { return }
        var events: UInt32 = 0
        if !s.readPaused && !s.inputEnded && s.protocolError == nil && !s.closing { events |= UInt32(APPD_EPOLL_IN) }
        if s.wantsWrite { events |= UInt32(APPD_EPOLL_OUT) }
        guard events != s.registeredEvents else { return }
        loop.modify(fd, events: events)
        s.registeredEvents = events
    }

    /// The loop now watches the fd for `events`.
    func registered(events: UInt32) {
        state.withLock { $0.registeredEvents = events }
    }

    // MARK: Reading (I/O thread)

    /// Reads what the socket has, queues whole calls, and wakes the worker.
    func readAvailable(into chunk: inout [UInt8]) {
        var wake: CheckedContinuation<Void, Never>?
        state.withLock { s in
            guard !s.closed, !s.closing else { return }
            while !s.readPaused && !s.inputEnded && s.protocolError == nil {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    chunk.withUnsafeBytes { s.reader.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                    pump(&s)
                    if n < chunk.count { break }
                } else if n == 0 {
                    s.inputEnded = true
                    if s.reader.pendingCount > 0 {
                        logger.notice("client closed mid-message", metadata: ["peer": peerDescription])
                    }
                } else {
                    if errno == EINTR { continue }
                    if errno != EAGAIN && errno != EWOULDBLOCK { s.inputEnded = true }
                    break
                }
            }
            updateInterest(&s)
            wake = s.worker
            s.worker = nil
        }
        wake?.resume()
    }

    /// Moves whole frames from the reader to the call queue, up to the queue limit.
    /// Call with the lock held.
    func pump(_ s: inout State) {
        while s.queued < limits.maxQueuedCalls && s.protocolError == nil {
            do {
                guard let frame = try s.reader.nextFrame() else { break }
                s.calls.append(try VarlinkCall(frame: frame))
                s.sawMessage = true
            } catch {
                s.protocolError = error.reason
                logger.warning("closing connection: \(error.reason)", metadata: ["peer": peerDescription])
            }
        }
        s.readPaused = s.queued >= limits.maxQueuedCalls
        s.reader.compact()
    }

    // MARK: The worker

    /// The next call to answer, or nil when the connection is done.
    func nextCall() async -> VarlinkCall? {
        while true {
            let (call, done) = state.withLock { s -> (VarlinkCall?, Bool) in
                s.busy = false
                if s.closed || s.closing { return (nil, true) }
                if s.queued == 0 && s.readPaused == false && s.reader.pendingCount > 0 { pump(&s) }
                if s.queued > 0 {
                    let call = s.calls[s.callsHead]
                    s.callsHead += 1
                    if s.callsHead == s.calls.count {
                        s.calls.removeAll(keepingCapacity: true)
                        s.callsHead = 0
                    }
                    if s.readPaused {
                        pump(&s)
                        updateInterest(&s)
                    }
                    s.busy = true
                    s.streaming = call.more
                    return (call, false)
                }
                if s.inputEnded || s.protocolError != nil { return (nil, true) }
                return (nil, false)
            }
            if let call { return call }
            if done { return nil }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let wait = state.withLock { s -> Bool in
                    guard s.queued == 0, !s.inputEnded, s.protocolError == nil, !s.closing, !s.closed else { return false }
                    s.worker = c
                    return true
                }
                if !wait { c.resume() }
            }
        }
    }

    /// Wakes a waiting worker so it notices the connection is closing.
    func wakeWorker() {
        state.withLock { s in defer { s.worker = nil }; return s.worker }?.resume()
    }

    /// Whether shutdown may close the connection now: the worker is between calls, or it is
    /// serving a stream (which may never end by itself).
    var isIdle: Bool { state.withLock { !$0.busy || $0.streaming } }

    /// The worker has finished: close once the replies are written.
    func workerFinished() {
        state.withLock { s in
            s.workerDone = true
            s.busy = false
            if s.output.count == s.outputStart { requestClose(&s) }
        }
    }

    // MARK: Writing

    struct Gone: Error {}

    /// Queues a reply and writes as much as the socket takes now; the I/O thread writes the
    /// rest when the socket is writable. Throws `Gone` when the connection is closed or the
    /// client has left more than the pending-output limit unread.
    func send(_ reply: VarlinkReply) throws(Gone) {
        try state.withLock { s throws(Gone) in
            guard !s.closed, !s.closing else { throw Gone() }
            reply.write(into: &s.output)
            if !s.wantsWrite { flush(&s) }
            if s.output.count - s.outputStart > limits.maxPendingOutputBytes {
                logger.warning(
                    "closing connection: client is not reading its replies",
                    metadata: ["peer": peerDescription, "pending.bytes": "\(s.output.count - s.outputStart)"])
                requestClose(&s)
                throw Gone()
            }
        }
    }

    /// Queues one reply of a stream; when the client has `streamHighWater` bytes unread, waits
    /// until it has read down to `streamLowWater`, so the stream's producer slows down with it.
    /// Throws `Gone` when the connection closes meanwhile (or the stall timeout closes it).
    func sendStreaming(_ reply: VarlinkReply) async throws(Gone) {
        try send(reply)
        let paused = state.withLock { s -> Bool in
            guard s.output.count - s.outputStart > limits.streamHighWater else { return false }
            s.streamPausedAt = .now
            return true
        }
        guard paused else { return }
        let resumed = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let now = state.withLock { s -> Bool? in
                if s.closed || s.closing { return false }
                if s.output.count - s.outputStart <= limits.streamLowWater { return true }
                s.streamWriter = c
                return nil
            }
            if let now { c.resume(returning: now) }
        }
        state.withLock { $0.streamPausedAt = nil }
        guard resumed else { throw Gone() }
    }

    /// Writes pending output (I/O thread on EPOLLOUT, or the worker). Call with the lock held.
    func flush(_ s: inout State) {
        while s.outputStart < s.output.count && !s.closed {
            let start = s.outputStart
            let n = s.output.withUnsafeBytes { buffer -> Int in
                // Safe: output is non-empty here (outputStart < count), so its base address exists.
                guard let base = buffer.baseAddress else { return 0 }
                return Glibc.send(fd, base + start, buffer.count - start, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                s.outputStart += n
                if s.streamPausedAt != nil { s.lastDrain = .now }
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                requestClose(&s)
                return
            }
        }
        if s.outputStart == s.output.count {
            s.output.removeAll(keepingCapacity: s.output.capacity <= 1 << 16)
            s.outputStart = 0
            s.wantsWrite = false
            if s.workerDone { requestClose(&s) }
        } else {
            s.wantsWrite = true
            if s.outputStart > 1 << 20 {
                s.output.removeFirst(s.outputStart)
                s.outputStart = 0
            }
        }
        updateInterest(&s)
    }

    func writable() {
        let writer = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            flush(&s)
            guard s.streamWriter != nil, s.output.count - s.outputStart <= limits.streamLowWater else { return nil }
            defer { s.streamWriter = nil }
            return s.streamWriter
        }
        writer?.resume(returning: true)
    }

    // MARK: Closing

    /// Asks the I/O thread to close: `shutdown` wakes epoll with a hang-up while the fd number
    /// stays ours until the I/O thread closes it. Call with the lock held.
    func requestClose(_ s: inout State) {
        guard !s.closing && !s.closed else { return }
        s.closing = true
        shutdown(fd, Int32(SHUT_RDWR))
    }

    func requestClose() {
        state.withLock { s in requestClose(&s) }
    }

    /// Closes the fd (I/O thread only). Returns false when it was closed already.
    func close() -> Bool {
        let (first, worker, writer) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?, CheckedContinuation<Bool, Never>?) in
            guard !s.closed else { return (false, nil, nil) }
            s.closed = true
            loop.remove(fd)
            Glibc.close(fd)
            defer { s.worker = nil; s.streamWriter = nil }
            return (true, s.worker, s.streamWriter)
        }
        worker?.resume()
        writer?.resume(returning: false)
        return first
    }

    /// Whether a close was requested (by the worker, a limit, or a hang-up).
    var isClosing: Bool { state.withLock { $0.closing && !$0.closed } }

    /// Whether the connection should be closed now (I/O thread housekeeping).
    func shouldClose(now: ContinuousClock.Instant) -> Bool {
        state.withLock { s in
            if s.closing || s.closed { return true }
            if let paused = s.streamPausedAt, now - max(paused, s.lastDrain) > limits.stalledStreamTimeout {
                logger.notice(
                    "closing connection: the client has not read its stream",
                    metadata: ["peer": peerDescription, "pending.bytes": "\(s.output.count - s.outputStart)"])
                requestClose(&s)
                return true
            }
            if !s.sawMessage && now - acceptedAt > limits.firstMessageTimeout {
                logger.notice("closing connection: no message within the first-message timeout", metadata: ["peer": peerDescription])
                requestClose(&s)
                return true
            }
            return false
        }
    }
}
