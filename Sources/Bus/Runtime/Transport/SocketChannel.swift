// SPDX-License-Identifier: Apache-2.0
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One accepted socket on an `EventLoop`: the connection core both protocols share (the varlink
/// and the HTTP connection are a decoder and an encoder on it). It owns the fd (closed once, on
/// the loop), the bytes waiting to be written, what epoll watches the fd for, and the one
/// producer that may wait for its client to read: above the high-water mark a stream's writer
/// waits, and the send that brings the buffer down to the low-water mark wakes it (no polling).
///
/// Writes come from any thread: they append under the lock and queue one flush on the loop, so
/// everything written in one round of the loop (the replies to pipelined calls, a fan-out's
/// events) goes out with one send(2). Reads, sends, epoll changes and closing happen on the loop
/// thread only.
public final class SocketChannel: Sendable {
    public enum Lifecycle: Sendable, Equatable {
        case open
        /// A close was asked for: the loop shuts the fd down, which wakes its handler with a
        /// hang-up, and the owner closes it there (the fd number stays ours until then).
        case closing
        case closed
    }

    /// How a read ended.
    public enum ReadEnd: Equatable {
        /// The socket has nothing more for now (or the reader stopped taking bytes).
        case open
        /// The client closed its side.
        case ended
        /// The socket failed (a reset).
        case failed
    }

    public let fd: Int32
    public let loop: EventLoop
    private let highWater: Int
    private let lowWater: Int

    private struct State {
        var lifecycle = Lifecycle.open
        var output = OutputBuffer()
        /// A flush job is queued on the loop (writes meanwhile only append).
        var flushQueued = false
        /// The last send could not take everything: the loop waits for EPOLLOUT.
        var blocked = false
        var reading = true
        var watched: UInt32 = 0
        /// When bytes last went out (or began waiting to).
        var lastProgress: ContinuousClock.Instant
        /// The producer waiting for its client to read, and since when.
        var writer: CheckedContinuation<Bool, Never>?
        var writerSince = ContinuousClock.now
        /// Runs on the loop each time a send leaves nothing unwritten.
        var drained: Drained?
        /// Close once a send leaves nothing unwritten (`requestCloseWhenDrained`).
        var closeWhenDrained = false

        var wantedEvents: UInt32 {
            guard lifecycle == .open else { return 0 }
            return (reading ? EventLoop.readable : 0) | (blocked ? EventLoop.writable : 0)
        }
    }
    private let state: Mutex<State>

    /// The `drained` callback, boxed: a closure returned out of the lock (through its generic
    /// result) was re-wrapped in a fresh allocation on every send.
    private final class Drained: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// A channel for `fd` (accepted, non-blocking); a producer waits above `highWater` unsent
    /// bytes until the client has read down to `lowWater`.
    public init(fd: Int32, loop: EventLoop, highWater: Int, lowWater: Int) {
        self.fd = fd
        self.loop = loop
        self.highWater = highWater
        self.lowWater = min(lowWater, highWater)
        state = Mutex(State(lastProgress: .now))
    }

    /// Starts watching the fd for reads; `handler` runs on the loop when it is ready, and
    /// `drained` each time a send leaves nothing unwritten.
    public func register(drained: (@Sendable () -> Void)? = nil, _ handler: @escaping EventLoop.Handler) {
        state.withLock { s in
            s.drained = drained.map(Drained.init)
            s.watched = EventLoop.readable
        }
        loop.add(fd, events: EventLoop.readable, handler: handler)
    }

    public var lifecycle: Lifecycle { state.withLock { $0.lifecycle } }
    /// Bytes not yet written; nil once the channel is closing.
    public var pending: Int? { state.withLock { $0.lifecycle == .open ? $0.output.pending : nil } }

    // MARK: Writing (any thread)

    /// Appends what `encode` writes and queues a flush; returns the bytes now unwritten, or
    /// nil when the channel is closing (nothing was written).
    @discardableResult
    public func write(_ encode: (inout [UInt8]) -> Void) -> Int? {
        append(encode, belowHighWaterOnly: false)
    }

    /// Appends what `encode` writes only while no more than the high-water mark is unwritten
    /// (a producer that cannot wait: it takes its slow path instead); false when it did not.
    public func writeIfBelowHighWater(_ encode: (inout [UInt8]) -> Void) -> Bool {
        append(encode, belowHighWaterOnly: true) != nil
    }

    private func append(_ encode: (inout [UInt8]) -> Void, belowHighWaterOnly: Bool) -> Int? {
        let (pending, queueFlush) = state.withLock { s -> (Int?, Bool) in
            guard s.lifecycle == .open else { return (nil, false) }
            if belowHighWaterOnly, s.output.pending > highWater || s.writer != nil { return (nil, false) }
            if s.output.isEmpty { s.lastProgress = loop.now }
            s.output.append(encoding: encode)
            // Blocked: the loop sends on EPOLLOUT; queued: the flush takes these bytes too.
            guard !s.flushQueued, !s.blocked else { return (s.output.pending, false) }
            s.flushQueued = true
            return (s.output.pending, true)
        }
        if queueFlush { loop.flushSoon(self) }
        return pending
    }

    @discardableResult
    public func write(_ bytes: [UInt8]) -> Int? { write { $0 += bytes } }

    /// When more than the high-water mark is unwritten, waits until the client has read down
    /// to the low-water mark. False when the channel closed, or the task was cancelled, first.
    public func waitForReader() async -> Bool {
        guard let pending, pending > highWater else { return lifecycle == .open }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { s -> Bool? in
                    guard s.lifecycle == .open, !Task.isCancelled else { return false }
                    if s.output.pending <= lowWater { return true }
                    s.writer = c
                    s.writerSince = .now
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { s in
                defer { s.writer = nil }; return s.writer
            }?.resume(returning: false)
        }
    }

    /// A producer has waited, with its client reading nothing, for longer than `limit`.
    public func writerStalled(now: ContinuousClock.Instant, limit: Duration) -> Bool {
        state.withLock { s in s.writer != nil && now - max(s.writerSince, s.lastProgress) > limit }
    }

    /// Bytes have waited, with the client reading nothing, for longer than `limit`.
    public func writeStalled(now: ContinuousClock.Instant, limit: Duration) -> Bool {
        state.withLock { s in !s.output.isEmpty && now - s.lastProgress > limit }
    }

    // MARK: On the loop

    /// Sends what the socket takes now (loop thread). A failed send closes the channel.
    public func flush() {
        // The view of the unwritten bytes ends with the send: the buffer is then referenced
        // only by the channel again, and `consume` empties it in place (a view still held
        // there made it copy the buffer on every send).
        let sending: (sent: Int, failed: Bool)? = {
            let unwritten = state.withLock { s -> ArraySlice<UInt8>? in
                s.flushQueued = false
                guard s.lifecycle == .open, !s.output.isEmpty else { return nil }
                return s.output.unwritten
            }
            return unwritten.map { Self.send(fd, $0) }
        }()
        guard let (sent, failed) = sending else { return }
        var writer: CheckedContinuation<Bool, Never>?
        var closeNow = false
        let (drained, interest) = state.withLock { s -> (Drained?, UInt32?) in
            // What went out is consumed even when a close was asked for meanwhile (from another
            // thread, between the two locks): the close's last send takes what is left, and
            // must not send these bytes again (a client would read a reply twice). Closed
            // (on this thread, so never meanwhile) has emptied the buffer already.
            guard s.lifecycle != .closed else { return (nil, nil) }
            if sent > 0 {
                s.output.consume(sent)
                s.lastProgress = loop.now
            }
            guard s.lifecycle == .open else { return (nil, nil) }
            if failed { s.lifecycle = .closing }
            s.blocked = !failed && !s.output.isEmpty
            if s.writer != nil, failed || s.output.pending <= lowWater {
                writer = s.writer
                s.writer = nil
            }
            let empty = s.output.isEmpty && !failed
            closeNow = empty && s.closeWhenDrained
            return (empty ? s.drained : nil, Self.interestChange(&s))
        }
        if let interest { loop.modify(fd, events: interest) }
        if failed { shutdown(fd, Int32(SHUT_RDWR)) }
        writer?.resume(returning: !failed)
        drained?.run()
        if closeNow { requestClose() }
    }

    /// Whether the loop should watch for reads (loop thread, or queued onto it).
    public func watchReads(_ on: Bool) {
        guard
            state.withLock({ s in
                defer { s.reading = on }; return s.reading != on
            })
        else { return }
        if loop.inLoopThread { applyInterest() } else { loop.execute { [self] in applyInterest() } }
    }

    private func applyInterest() {
        if let change = state.withLock({ Self.interestChange(&$0) }) { loop.modify(fd, events: change) }
    }

    /// The epoll events to switch to, when they differ from those watched.
    private static func interestChange(_ s: inout State) -> UInt32? {
        guard s.lifecycle == .open, s.wantedEvents != s.watched else { return nil }
        s.watched = s.wantedEvents
        return s.watched
    }

    /// Reads what the socket has (loop thread), passing each chunk to `received` until the
    /// socket has nothing more, `limit` bytes were read, or `received` returns false. With
    /// `toEnd` (after a hang-up) it reads on until the end instead of stopping at a short read.
    public func read(into scratch: inout [UInt8], limit: Int = .max, toEnd: Bool = false, _ received: (ArraySlice<UInt8>) -> Bool) -> ReadEnd {
        var total = 0
        while total < limit {
            let n = scratch.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                total += n
                guard received(scratch[0..<n]) else { return .open }
                // Short of the buffer: the socket is drained for now. The loop is level-triggered,
                // so what arrives later (or the client closing) is reported again.
                if n < scratch.count && !toEnd { return .open }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n == 0 { return .ended }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .open : .failed
        }
        return .open
    }

    /// Shuts the write side (loop thread): the client reads the end of what was sent.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Asks for a close (any thread): nothing more is written, the loop sends what the socket
    /// takes at once of what was written before (a last reply whose flush was still queued:
    /// a shutdown's own reply), drops the rest, and shuts the fd down; the owner's handler,
    /// woken by the hang-up, calls `close`.
    public func requestClose() {
        guard
            state.withLock({ s in
                defer { if s.lifecycle == .open { s.lifecycle = .closing } }; return s.lifecycle == .open
            })
        else { return }
        let job: @Sendable () -> Void = { [self] in
            let unwritten = state.withLock { s -> ArraySlice<UInt8>? in
                guard s.lifecycle == .closing, !s.blocked, !s.output.isEmpty else { return nil }
                return s.output.unwritten
            }
            if let unwritten { _ = Self.send(fd, unwritten) }
            if lifecycle == .closing { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        if loop.inLoopThread { job() } else { loop.execute(job) }
    }

    /// Asks for a close once everything written so far is sent: now when nothing is unwritten,
    /// else after the send that leaves nothing (a connection whose last reply is queued). One
    /// flag in the channel, not a callback after every send to ask whether it is time.
    public func requestCloseWhenDrained() {
        let now = state.withLock { s -> Bool in
            guard s.lifecycle == .open else { return false }
            if s.output.isEmpty { return true }
            s.closeWhenDrained = true
            return false
        }
        if now { requestClose() }
    }

    /// Closes the fd (loop thread) and tells a waiting producer; false when it was closed already.
    public func close() -> Bool {
        let (first, writer) = state.withLock { s -> (Bool, CheckedContinuation<Bool, Never>?) in
            guard s.lifecycle != .closed else { return (false, nil) }
            s.lifecycle = .closed
            s.output = OutputBuffer()
            s.drained = nil
            defer { s.writer = nil }
            return (true, s.writer)
        }
        guard first else { return false }
        loop.remove(fd)
        Glibc.close(fd)
        writer?.resume(returning: false)
        return true
    }

    /// Sends `bytes` on `fd` until the socket takes no more: how many went, and whether it failed.
    static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> (sent: Int, failed: Bool) {
        bytes.withUnsafeBytes { buffer -> (Int, Bool) in
            guard let base = buffer.baseAddress else { return (0, false) }
            var sent = 0
            while sent < buffer.count {
                let n = Glibc.send(fd, base + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                if n > 0 {
                    sent += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return (sent, !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)))
                }
            }
            return (sent, false)
        }
    }

    /// One best-effort send outside any channel (a refusal before a connection is admitted).
    public static func sendOnce(_ fd: Int32, _ bytes: [UInt8]) { _ = send(fd, bytes[...]) }
}
