import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// Writing replies: the worker queues them, the loop thread sends them outside the lock.
extension VarlinkConnection {
    struct Gone: Error {}

    /// Queues a reply and, on the loop thread, writes what the socket takes now (else the loop
    /// writes it soon). Throws `Gone` when the connection is closed or the client has left more
    /// than the pending-output limit unread.
    func send(_ reply: VarlinkReply) throws(Gone) {
        let onLoop = loop.inLoopThread
        var effects = Effects()
        var taken: Taken?
        let gone = state.withLock { s -> Bool in
            guard s.lifecycle == .open else { return true }
            let wasEmpty = s.output.count == s.outputStart
            reply.write(into: &s.output)
            if s.pending > limits.maxPendingOutputBytes {
                effects.logs.append(Effects.Log(level: .warning, message: "closing connection: client is not reading its replies", metadata: ["peer": peerDescription, "pending.bytes": "\(s.pending)"]))
                requestClose(&s, &effects)
                return true
            }
            // When output was already waiting, the loop writes it on EPOLLOUT (in order).
            if wasEmpty && s.sending == 0 {
                if onLoop { taken = take(&s) } else { effects.flush = true }
            }
            return false
        }
        if let taken { written(taken, sent: write(taken)) }
        perform(effects)
        if gone { throw Gone() }
    }

    /// Queues one reply of a stream; when the client has `streamHighWater` bytes unread, waits
    /// until it has read down to `streamLowWater`, so the stream's producer slows down with it.
    /// Throws `Gone` when the connection closes meanwhile (or the stall timeout closes it).
    func sendStreaming(_ reply: VarlinkReply) async throws(Gone) {
        try send(reply)
        let paused = state.withLock { s -> Bool in
            guard s.pending > limits.streamHighWater else { return false }
            s.stream = StreamPause(since: .now, lastDrain: .now, writer: nil)
            return true
        }
        guard paused else { return }
        let resumed = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let now = state.withLock { s -> Bool? in
                if s.lifecycle != .open { return false }
                if s.pending <= limits.streamLowWater { return true }
                s.stream?.writer = c
                return nil
            }
            if let now { c.resume(returning: now) }
        }
        state.withLock { $0.stream = nil }
        guard resumed else { throw Gone() }
    }

    /// Output copied out of the state to be sent without the lock: `count` bytes in the
    /// connection's send buffer, which only the loop thread touches.
    struct Taken {
        let count: Int
    }

    /// Copies the unwritten output into the send buffer (under the lock; loop thread). The
    /// bytes stay in `output` (counted as `sending`) until the write says how many went.
    func take(_ s: inout State) -> Taken? {
        guard s.lifecycle == .open, s.sending == 0, s.output.count > s.outputStart else { return nil }
        let count = s.output.count - s.outputStart
        sendBuffer.bytes.removeAll(keepingCapacity: true)
        sendBuffer.bytes.append(contentsOf: s.output[s.outputStart...])
        s.sending = count
        return Taken(count: count)
    }

    /// Writes what the socket takes now (loop thread).
    func flush() {
        guard let taken = state.withLock({ take(&$0) }) else { return }
        written(taken, sent: write(taken))
    }

    /// Sends the send buffer (loop thread, no lock): how far it got, and whether the socket failed.
    func write(_ taken: Taken) -> (count: Int, failed: Bool) {
        var sent = 0
        while sent < taken.count {
            let n = sendBuffer.bytes.withUnsafeBytes { buffer -> Int in
                // Safe: sent < count, so the buffer is non-empty and has a base address.
                guard let base = buffer.baseAddress else { return 0 }
                return Glibc.send(fd, base + sent, taken.count - sent, Int32(MSG_NOSIGNAL))
            }
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

    /// Marks what was sent as written and updates the state after a write (loop thread).
    func written(_ taken: Taken, sent: (count: Int, failed: Bool)) {
        var effects = Effects()
        state.withLock { s in
            s.sending = 0
            s.outputStart += sent.count
            if sent.count > 0, s.stream != nil { s.stream?.lastDrain = .now }
            if sent.failed { requestClose(&s, &effects) }
            if s.output.count == s.outputStart {
                s.output.removeAll(keepingCapacity: s.output.capacity <= 1 << 16)
                s.outputStart = 0
                if case .finished = s.worker { requestClose(&s, &effects) }
            } else if s.outputStart > 1 << 20 {
                s.output.removeFirst(s.outputStart)
                s.outputStart = 0
            }
            if let writer = s.stream?.writer, s.pending <= limits.streamLowWater {
                s.stream?.writer = nil
                effects.resumeWriter = writer
            }
            effects.interestChanged = s.interestChanged
        }
        perform(effects)
    }

    /// The socket can take more (loop thread).
    func writable() { flush() }
}

/// A connection's send buffer, reused for every write.
final class SendBuffer: @unchecked Sendable {  // safe: only the loop thread uses it
    var bytes: [UInt8] = []
}
