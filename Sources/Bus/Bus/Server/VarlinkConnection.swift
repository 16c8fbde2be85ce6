import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One client connection: the bytes read, the calls waiting, the replies not yet written.
///
/// Its state is a few enums under one lock, and the lock guards state only: every syscall on
/// the fd (read, send, epoll changes, shutdown, close) happens on the loop thread, outside the
/// lock, and every log line and continuation resume after it is released. The worker task
/// (one per connection) answers calls strictly in order; it queues replies and, when it is not
/// on the loop thread itself, asks the loop to write them.
final class VarlinkConnection: Sendable {
    /// Whether the fd is still ours.
    enum Lifecycle: Equatable {
        case open
        /// A close was asked for (`shutdown` woke the loop); the loop closes the fd next.
        case closing
        case closed
    }

    /// What the read side is doing.
    enum Input: Equatable {
        /// Open, before any whole message (the first-message timeout runs).
        case awaitingFirstMessage
        case reading
        /// The call queue is full: not reading until the worker takes a call.
        case paused
        /// The client closed its side (or reading failed): answer what is queued, then close.
        case ended
        /// The client broke the protocol: answer what is queued, then close.
        case broken(String)

        var isOpen: Bool { self == .awaitingFirstMessage || self == .reading }
    }

    /// What the connection's worker task is doing.
    enum Worker {
        /// Between calls.
        case idle
        /// Waiting for the next call.
        case waiting(CheckedContinuation<Void, Never>)
        case answering(streaming: Bool)
        /// Done: the connection closes once its replies are written.
        case finished
    }

    /// A stream whose client has fallen behind: the worker waits for it to read.
    struct StreamPause {
        var since: ContinuousClock.Instant
        var lastDrain: ContinuousClock.Instant
        var writer: CheckedContinuation<Bool, Never>?
    }

    struct State {
        var lifecycle = Lifecycle.open
        var input = Input.awaitingFirstMessage
        var worker = Worker.idle
        var reader: VarlinkFrameReader
        var calls: [VarlinkCall] = []
        var callsHead = 0
        /// Replies not yet written; bytes before `outputStart` are written already.
        var output: [UInt8] = []
        var outputStart = 0
        /// Bytes at `outputStart` the loop is sending right now (copied to its send buffer).
        var sending = 0
        var stream: StreamPause?
        var registeredEvents: UInt32 = 0

        var queued: Int { calls.count - callsHead }
        var pending: Int { output.count - outputStart }

        /// Whether epoll must be told of a change (`applyInterest` does it on the loop).
        var interestChanged: Bool { lifecycle != .closed && wantedEvents != registeredEvents }

        /// The epoll events the state wants.
        var wantedEvents: UInt32 {
            guard lifecycle == .open else { return 0 }
            var events: UInt32 = 0
            if input.isOpen { events |= EventLoop.readable }
            if output.count > outputStart + sending { events |= EventLoop.writable }
            return events
        }
    }

    /// What to do once the lock is released.
    struct Effects {
        /// A log line to write once the lock is released.
        struct Log {
            let level: LogLevel
            let message: String
            let metadata: LogMetadata
        }
        var logs: [Log] = []
        var resumeWorker: CheckedContinuation<Void, Never>?
        /// A paused stream writer to resume (always with true: the client caught up).
        var resumeWriter: CheckedContinuation<Bool, Never>?
        /// Ask the loop to shut the fd down (a close was requested).
        var shutdown = false
        /// The epoll events the state wants have changed.
        var interestChanged = false
        /// Output is waiting to be written.
        var flush = false
    }

    let fd: Int32
    let loop: EventLoop
    let context: ConnectionContext
    let acceptedAt = ContinuousClock.now
    let limits: ServerLimits
    let logger: Logger
    let state: Mutex<State>
    /// What the loop is sending now; only the loop thread touches it.
    let sendBuffer = SendBuffer()

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

    /// The loop now watches the fd for `events`.
    func registered(events: UInt32) {
        state.withLock { $0.registeredEvents = events }
    }

    // MARK: Effects (outside the lock)

    /// Applies `effects`: fd work on the loop thread (now when already there), then logs and resumes.
    func perform(_ effects: Effects) {
        if effects.shutdown || effects.interestChanged || effects.flush {
            if loop.inLoopThread {
                loopWork(effects)
            } else {
                loop.execute { [self] in loopWork(effects) }
            }
        }
        if !effects.logs.isEmpty {
            for log in effects.logs { logger.log(log.level, log.message, metadata: log.metadata) }
        }
        effects.resumeWorker?.resume()
        effects.resumeWriter?.resume(returning: true)
    }

    /// The fd work of `effects` (loop thread).
    private func loopWork(_ effects: Effects) {
        if effects.flush { flush() }
        if effects.shutdown { shutdownIfOpen() }
        if effects.interestChanged { applyInterest() }
    }

    /// Brings epoll in line with the state (loop thread).
    private func applyInterest() {
        let change = state.withLock { s -> UInt32? in
            guard s.lifecycle != .closed, s.wantedEvents != s.registeredEvents else { return nil }
            s.registeredEvents = s.wantedEvents
            return s.registeredEvents
        }
        if let change { loop.modify(fd, events: change) }
    }


    // MARK: Reading (loop thread)

    /// Reads what the socket has, queues whole calls, and wakes the worker (loop thread; the
    /// loop alone reads and closes the fd, so the read needs no lock). The loop only asks while
    /// reading is on, or on a hang-up: bytes that arrive while the call queue is full stay in
    /// the reader until the worker makes room.
    func readAvailable(into chunk: inout [UInt8]) {
        var effects = Effects()
        var more = true
        while more {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            let wouldBlock = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            more = state.withLock { s -> Bool in
                var again = false
                if s.lifecycle == .open && (s.input.isOpen || s.input == .paused) {
                    if n > 0 {
                        chunk.withUnsafeBytes { s.reader.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                        pump(&s, &effects)
                        again = n == chunk.count && s.input.isOpen
                    } else if !wouldBlock {
                        if n == 0 && s.reader.pendingCount > 0 {
                            effects.logs.append(Effects.Log(level: .notice, message: "client closed mid-message", metadata: ["peer": peerDescription]))
                        }
                        s.input = .ended
                    }
                }
                if !again {
                    effects.interestChanged = s.interestChanged
                    if case .waiting(let worker) = s.worker {
                        s.worker = .idle
                        effects.resumeWorker = worker
                    }
                }
                return again
            }
        }
        perform(effects)
    }

    /// Moves whole frames from the reader to the call queue, up to the queue limit (under the
    /// lock). Frames already read are still taken after the client closed its side.
    private func pump(_ s: inout State, _ effects: inout Effects) {
        while s.queued < limits.maxQueuedCalls {
            if case .broken = s.input { break }
            do {
                guard let frame = try s.reader.nextFrame() else { break }
                s.calls.append(try VarlinkCall(frame: frame))
                if s.input == .awaitingFirstMessage { s.input = .reading }
            } catch {
                s.input = .broken(error.reason)
                effects.logs.append(Effects.Log(level: .warning, message: "closing connection: \(error.reason)", metadata: ["peer": peerDescription]))
            }
        }
        switch s.input {
        case .reading, .paused: s.input = s.queued >= limits.maxQueuedCalls ? .paused : .reading
        case .awaitingFirstMessage, .ended, .broken: break
        }
        s.reader.compact()
    }

    // MARK: The worker

    /// The next call to answer, or nil when the connection is done.
    func nextCall() async -> VarlinkCall? {
        while true {
            var effects = Effects()
            let (call, done) = state.withLock { s -> (VarlinkCall?, Bool) in
                s.worker = .idle
                if s.lifecycle != .open { return (nil, true) }
                if s.queued == 0 && s.input != .paused && s.reader.pendingCount > 0 { pump(&s, &effects) }
                if s.queued > 0 {
                    let call = s.calls[s.callsHead]
                    s.callsHead += 1
                    if s.callsHead == s.calls.count {
                        s.calls.removeAll(keepingCapacity: true)
                        s.callsHead = 0
                    }
                    if s.input == .paused {
                        pump(&s, &effects)
                        effects.interestChanged = s.interestChanged
                    }
                    s.worker = .answering(streaming: call.more)
                    return (call, false)
                }
                switch s.input {
                case .ended, .broken: return (nil, true)
                default: return (nil, false)
                }
            }
            perform(effects)
            if let call { return call }
            if done { return nil }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let wait = state.withLock { s -> Bool in
                    guard s.queued == 0, s.input.isOpen, s.lifecycle == .open else { return false }
                    s.worker = .waiting(c)
                    return true
                }
                if !wait { c.resume() }
            }
        }
    }

    /// Wakes a waiting worker so it notices the connection is closing.
    func wakeWorker() {
        let worker = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard case .waiting(let worker) = s.worker else { return nil }
            s.worker = .idle
            return worker
        }
        worker?.resume()
    }

    /// Whether shutdown may close the connection now: the worker is between calls, or it is
    /// serving a stream (which may never end by itself).
    var isIdle: Bool {
        state.withLock { s in
            if case .answering(let streaming) = s.worker { return streaming }
            return true
        }
    }

    /// The worker has finished: close once the replies are written.
    func workerFinished() {
        var effects = Effects()
        state.withLock { s in
            s.worker = .finished
            if s.pending == 0 { requestClose(&s, &effects) }
        }
        perform(effects)
    }

    // MARK: Closing

    /// Marks the connection closing; the loop then shuts the fd down, which wakes epoll with
    /// a hang-up while the fd number stays ours until the loop closes it (under the lock).
    func requestClose(_ s: inout State, _ effects: inout Effects) {
        guard s.lifecycle == .open else { return }
        s.lifecycle = .closing
        effects.shutdown = true
    }

    func requestClose() {
        var effects = Effects()
        state.withLock { s in requestClose(&s, &effects) }
        perform(effects)
    }

    /// `shutdown(2)` on the fd, unless the loop has closed it already (loop thread).
    private func shutdownIfOpen() {
        guard state.withLock({ $0.lifecycle == .closing }) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Closes the fd (loop thread only). Returns false when it was closed already.
    func close() -> Bool {
        let resumes = state.withLock { s -> (CheckedContinuation<Void, Never>?, CheckedContinuation<Bool, Never>?)? in
            guard s.lifecycle != .closed else { return nil }
            s.lifecycle = .closed
            var worker: CheckedContinuation<Void, Never>?
            if case .waiting(let waiting) = s.worker {
                worker = waiting
                s.worker = .idle
            }
            defer { s.stream?.writer = nil }
            return (worker, s.stream?.writer)
        }
        guard let (worker, writer) = resumes else { return false }
        loop.remove(fd)
        Glibc.close(fd)
        worker?.resume()
        writer?.resume(returning: false)
        return true
    }

    /// Whether a close was requested (by the worker, a limit, or a hang-up).
    var isClosing: Bool { state.withLock { $0.lifecycle == .closing } }

    /// Whether the connection should be closed now (the loop's housekeeping).
    func shouldClose(now: ContinuousClock.Instant) -> Bool {
        var effects = Effects()
        let close = state.withLock { s -> Bool in
            if s.lifecycle != .open { return true }
            if let stream = s.stream, now - max(stream.since, stream.lastDrain) > limits.stalledStreamTimeout {
                effects.logs.append(Effects.Log(level: .notice, message: "closing connection: the client has not read its stream", metadata: ["peer": peerDescription, "pending.bytes": "\(s.pending)"]))
                requestClose(&s, &effects)
                return true
            }
            if s.input == .awaitingFirstMessage && now - acceptedAt > limits.firstMessageTimeout {
                effects.logs.append(Effects.Log(level: .notice, message: "closing connection: no message within the first-message timeout", metadata: ["peer": peerDescription]))
                requestClose(&s, &effects)
                return true
            }
            return false
        }
        perform(effects)
        return close
    }
}
