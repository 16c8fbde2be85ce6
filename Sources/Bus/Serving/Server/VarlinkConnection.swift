// SPDX-License-Identifier: Apache-2.0
import Runtime
import Synchronization

/// One varlink client connection: the frame reader and the call queue on a `SocketChannel`
/// (which owns the fd, the replies not yet written and the stream's back-pressure).
///
/// Its state is a few enums under one lock, and the lock guards state only: every syscall goes
/// through the channel, and every log line and continuation resume happens after the lock is
/// released. The worker task (one per connection) answers calls strictly in order and queues
/// its replies on the channel.
final class VarlinkConnection: Sendable {
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
        /// Waiting for the next call; resumed with true when it is retired.
        case waiting(CheckedContinuation<Bool, Never>)
        case answering(streaming: Bool)
        /// Done: the connection closes once its replies are written.
        case finished
        /// No worker task: none yet (calls the loop answers need none), or it ended after
        /// waiting `idleWorkerRetirement` (`retireIdleWorker`). The next call the loop does not
        /// answer, or the connection's end, needs one (`readAvailable` says so).
        case absent
    }

    /// What `nextCall` found.
    enum Next {
        /// A call, with its method's route when the loop resolved it already (it offered the
        /// call to `answerNow`): the worker does not look the method up again.
        case call(VarlinkCall, VarlinkRoute?)
        /// The connection is done: the worker finishes it.
        case done
        /// The worker was retired while it waited: it ends, and leaves the connection as it is.
        case retired
    }

    struct State {
        var input = Input.awaitingFirstMessage
        var worker = Worker.absent
        var reader: VarlinkFrameReader
        var calls: [QueuedCall] = []
        var callsHead = 0
        /// The loop is answering a call where it read it (`readAvailable`): the worker takes
        /// nothing meanwhile, so replies keep the calls' order.
        var answeringNow = false
        /// Since when the worker waits for a call (it is retired after `idleWorkerRetirement`).
        var waitingSince: ContinuousClock.Instant?

        var queued: Int { calls.count - callsHead }

        /// Whether the loop may answer `call` itself: nothing is queued or being answered
        /// before it, and it wants one reply.
        func mayAnswerNow(_ call: VarlinkCall) -> Bool {
            guard queued == 0, !call.more, call.idempotencyKey == nil else { return false }
            switch worker {
            case .idle, .waiting, .absent: return true
            case .answering, .finished: return false
            }
        }
    }

    /// A call waiting for the worker, with its route when the loop resolved it.
    struct QueuedCall {
        var call: VarlinkCall
        var route: VarlinkRoute?
    }

    /// What the loop did with a call it was offered (`readAvailable`'s `answerNow`).
    enum Offered {
        /// Answered where it was read.
        case answered
        /// For the worker, with the method's route when it was resolved.
        case queued(VarlinkRoute?)
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
        var resumeWorker: CheckedContinuation<Bool, Never>?
        /// There is no worker and there is something for one to do: start one.
        var startWorker = false
        /// Whether the channel should read on (set when the input state may have changed).
        var reading: Bool?
    }

    let channel: SocketChannel
    let context: ConnectionContext
    let acceptedAt = ContinuousClock.now
    let limits: ServerLimits
    let logger: Logger
    let state: Mutex<State>

    init(channel: SocketChannel, context: ConnectionContext, limits: ServerLimits, logger: Logger) {
        self.channel = channel
        self.context = context
        self.limits = limits
        self.logger = logger
        self.state = Mutex(State(reader: VarlinkFrameReader(maxBytes: limits.maxMessageBytes)))
    }

    var fd: Int32 { channel.fd }

    var peerDescription: String {
        context.peer.map { "uid=\($0.uid) pid=\($0.pid)" } ?? "unknown"
    }

    /// Applies `effects` (outside the lock).
    func perform(_ effects: Effects) {
        if let reading = effects.reading { channel.watchReads(reading) }
        for log in effects.logs { logger.log(log.level, log.message, metadata: log.metadata) }
        effects.resumeWorker?.resume(returning: false)
    }

    // MARK: Reading (loop thread)

    /// Reads what the socket has, queues whole calls, and wakes the worker (loop thread). The
    /// loop only asks while reading is on, or on a hang-up: bytes that arrive while the call
    /// queue is full stay in the kernel until the worker makes room.
    /// A call with nothing before it is first offered to `answerNow`, which answers it here
    /// when it can (a handler that never waits: no task, no hop) and returns false otherwise
    /// (the call is then queued for the worker). True when the connection has no worker and one
    /// must be started (a call is queued, or the connection is ending).
    func readAvailable(into chunk: inout [UInt8], hangup: Bool, answerNow: (VarlinkCall) -> Offered) -> Bool {
        var effects = Effects()
        let end = channel.read(into: &chunk, toEnd: hangup) { bytes in
            var offered = state.withLock { s -> VarlinkCall? in
                guard s.input.isOpen || s.input == .paused else { return nil }
                bytes.withUnsafeBytes { s.reader.append($0) }
                return pump(&s, &effects, offering: true)
            }
            while let call = offered {
                let outcome = answerNow(call)
                offered = state.withLock { s -> VarlinkCall? in
                    s.answeringNow = false
                    if case .queued(let route) = outcome { s.calls.append(QueuedCall(call: call, route: route)) }
                    return pump(&s, &effects, offering: true)
                }
            }
            return state.withLock { $0.input.isOpen }
        }
        state.withLock { s in
            if end != .open, s.input.isOpen || s.input == .paused {
                if s.reader.pendingCount > 0 {
                    effects.logs.append(Effects.Log(level: .notice, message: "client closed mid-message", metadata: ["peer": peerDescription]))
                }
                s.input = .ended
            }
            effects.reading = s.input.isOpen
            // Woken only when there is a call for it, or the connection is ending.
            if s.queued > 0 || !s.input.isOpen {
                switch s.worker {
                case .waiting(let worker):
                    s.worker = .idle
                    s.waitingSince = nil
                    effects.resumeWorker = worker
                case .absent:
                    s.worker = .idle
                    effects.startWorker = true
                case .idle, .answering, .finished:
                    break
                }
            }
        }
        perform(effects)
        return effects.startWorker
    }

    /// Moves whole frames from the reader to the call queue, up to the queue limit (under the
    /// lock). Frames already read are still taken after the client closed its side.
    /// `offering`: stops at a call the loop may answer itself (`State.mayAnswerNow`) and returns
    /// it, marked as being answered now, instead of queueing it.
    @discardableResult
    private func pump(_ s: inout State, _ effects: inout Effects, offering: Bool = false) -> VarlinkCall? {
        var offered: VarlinkCall?
        while s.queued < limits.maxQueuedCalls {
            if case .broken = s.input { break }
            do {
                guard let frame = try s.reader.nextFrame() else { break }
                let call = try VarlinkCall(frame: frame)
                if s.input == .awaitingFirstMessage { s.input = .reading }
                if offering, s.mayAnswerNow(call) {
                    s.answeringNow = true
                    offered = call
                    break
                }
                s.calls.append(QueuedCall(call: call, route: nil))
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
        return offered
    }

    // MARK: The worker

    /// The next call to answer, the connection's end, or the worker's retirement.
    func nextCall() async -> Next {
        while true {
            if channel.lifecycle != .open { return .done }
            var effects = Effects()
            let (queued, done) = state.withLock { s -> (QueuedCall?, Next?) in
                s.worker = .idle
                s.waitingSince = nil
                // The loop answering a call now: what follows it waits until it is answered.
                if s.answeringNow { return (nil, nil) }
                if s.queued == 0 && s.input != .paused && s.reader.pendingCount > 0 { pump(&s, &effects) }
                if s.queued > 0 {
                    let queued = s.calls[s.callsHead]
                    s.callsHead += 1
                    if s.callsHead == s.calls.count {
                        s.calls.removeAll(keepingCapacity: true)
                        s.callsHead = 0
                    }
                    if s.input == .paused {
                        pump(&s, &effects)
                        effects.reading = s.input.isOpen
                    }
                    s.worker = .answering(streaming: queued.call.more)
                    return (queued, nil)
                }
                switch s.input {
                case .ended, .broken: return (nil, .done)
                default: return (nil, nil)
                }
            }
            perform(effects)
            if let queued { return .call(queued.call, queued.route) }
            if let done { return done }
            // Told it is retired through the continuation itself: by the time this task runs
            // again, the loop may have started the next worker.
            let retired = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let wait = state.withLock { s -> Bool in
                    guard s.answeringNow || (s.queued == 0 && s.input.isOpen), channel.lifecycle == .open else { return false }
                    s.worker = .waiting(c)
                    s.waitingSince = .now
                    return true
                }
                if !wait { c.resume(returning: false) }
            }
            if retired { return .retired }
        }
    }

    /// Retires the worker when it has waited `idleWorkerRetirement` for a call (loop thread, the
    /// sweep): it is resumed with `true` and ends; the connection has no worker until the next
    /// call. A task keeps the memory of its deepest moment (its allocator's slabs) until it ends:
    /// a connection that made one call through the gates held ~6 KB more than a fresh one, and a
    /// fresh one's waiting worker ~2 KB. True when it was retired (the server forgets its task).
    func retireIdleWorker(now: ContinuousClock.Instant) -> Bool {
        let worker = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            guard case .waiting(let worker) = s.worker, let since = s.waitingSince, now - since >= limits.idleWorkerRetirement else { return nil }
            s.worker = .absent
            s.waitingSince = nil
            return worker
        }
        worker?.resume(returning: true)
        return worker != nil
    }

    /// Returns a call `nextCall` gave, to be given again first (to the worker that takes over).
    func putBack(_ call: VarlinkCall, route: VarlinkRoute?) {
        state.withLock { s in
            let queued = QueuedCall(call: call, route: route)
            if s.callsHead > 0 {
                s.callsHead -= 1
                s.calls[s.callsHead] = queued
            } else {
                s.calls.insert(queued, at: 0)
            }
            s.worker = .idle
        }
    }

    /// Wakes a waiting worker so it notices the connection is closing.
    func wakeWorker() {
        let worker = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            guard case .waiting(let worker) = s.worker else { return nil }
            s.worker = .idle
            s.waitingSince = nil
            return worker
        }
        worker?.resume(returning: false)
    }

    /// Whether shutdown may close the connection now: the worker is between calls, or it is
    /// serving a stream (which may never end by itself).
    var isIdle: Bool {
        state.withLock { s in
            if case .answering(let streaming) = s.worker { return streaming }
            return true
        }
    }

    /// The worker has finished: close once the replies are written (the channel closes after
    /// the send that leaves nothing unwritten, or now when that was the last one).
    func workerFinished() {
        state.withLock { $0.worker = .finished }
        channel.requestCloseWhenDrained()
    }

    // MARK: Closing

    /// Closes the fd (loop thread) and wakes the worker; false when it was closed already.
    func close() -> Bool {
        guard channel.close() else { return false }
        wakeWorker()
        return true
    }

    /// Whether the connection should be closed now (the loop's housekeeping).
    func shouldClose(now: ContinuousClock.Instant) -> Bool {
        if channel.lifecycle != .open { return true }
        if channel.writerStalled(now: now, limit: limits.stalledStreamTimeout) {
            logger.notice("closing connection: the client has not read its stream", metadata: ["peer": peerDescription, "pending.bytes": "\(channel.pending ?? 0)"])
            channel.requestClose()
            return true
        }
        let waitingForFirst = state.withLock { $0.input == .awaitingFirstMessage }
        if waitingForFirst && now - acceptedAt > limits.firstMessageTimeout {
            logger.notice("closing connection: no message within the first-message timeout", metadata: ["peer": peerDescription])
            channel.requestClose()
            return true
        }
        return false
    }

    // MARK: Writing

    struct Gone: Error {}

    /// Queues a reply (the channel writes it with whatever else this round of the loop queued).
    /// Throws `Gone` when the connection is closed or the client has left more than the
    /// pending-output limit unread.
    func send(_ reply: VarlinkReply) throws(Gone) {
        guard let pending = channel.write({ reply.write(into: &$0) }) else { throw Gone() }
        if pending > limits.maxPendingOutputBytes {
            logger.warning("closing connection: client is not reading its replies", metadata: ["peer": peerDescription, "pending.bytes": "\(pending)"])
            channel.requestClose()
            throw Gone()
        }
    }

    /// Queues an intermediate reply whose parameters are encoded already, from any thread (a
    /// publisher's: the fan-out path), unless the client has `streamHighWater` bytes unread or
    /// the connection is closing: false then, and the reply takes `sendStreaming`'s way.
    func sendContinuing(parameters: [UInt8]) -> Bool {
        channel.writeIfBelowHighWater { VarlinkReply.writeContinuing(parameters: parameters, into: &$0) }
    }

    /// Queues one reply of a stream; when the client has `streamHighWater` bytes unread, waits
    /// until it has read down to `streamLowWater`, so the stream's producer slows down with it.
    /// Throws `Gone` when the connection closes meanwhile (or the stall timeout closes it).
    func sendStreaming(_ reply: VarlinkReply) async throws(Gone) {
        try send(reply)
        guard await channel.waitForReader() else { throw Gone() }
    }
}
