// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// Why a client call did not get a reply.
public enum VarlinkClientError: Error, Equatable, CustomStringConvertible {
    /// Nothing is listening on the socket (or it does not exist).
    case cannotConnect(path: String, code: Int32)
    /// The reply did not arrive in time.
    case timedOut(seconds: Double)
    /// The server closed the connection.
    case closed
    /// The server sent something that is not a varlink reply.
    case protocolViolation(String)

    public var description: String {
        switch self {
        case .cannotConnect(let path, let code): "cannot connect to \(path): \(String(cString: strerror(code)))"
        case .timedOut(let seconds): "no reply within \(seconds) s"
        case .closed: "the daemon closed the connection"
        case .protocolViolation(let reason): "unexpected data from the daemon: \(reason)"
        }
    }
}

/// A blocking varlink client over a Unix socket: connect, pipeline, call, stream.
///
/// Synchronous on purpose: appctl starts, makes a call and exits, and needs no async runtime.
/// One client belongs to one thread.
public final class VarlinkClient {
    public let path: String
    /// How long to wait for each reply.
    public var timeout: Duration
    private let fd: Int32
    private var reader = VarlinkFrameReader(maxBytes: VarlinkFrameReader.hardMaxMessageBytes)
    private var buffer = [UInt8](repeating: 0, count: 65536)

    public init(path: String, timeout: Duration = .seconds(30)) throws(VarlinkClientError) {
        self.path = path
        self.timeout = timeout
        let fd = appd_unix_connect(path)
        guard fd >= 0 else { throw .cannotConnect(path: path, code: errno) }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Who is listening on the other end (`SO_PEERCRED`), read before anything is sent, so a
    /// client can refuse to hand a password to a process that is not the daemon it meant.
    public var server: PeerCredentials? {
        var uid: UInt32 = 0, gid: UInt32 = 0, pid: Int32 = 0
        guard appd_peer_credentials(fd, &uid, &gid, &pid) == 0 else { return nil }
        return PeerCredentials(uid: uid, gid: gid, pid: pid)
    }

    /// Sends a call without waiting (pipelining): replies come back in order via `receive`.
    public func send(_ call: VarlinkCall) throws(VarlinkClientError) {
        try write(call.frame())
    }

    /// Writes raw bytes (tests use it for malformed input).
    public func write(_ bytes: [UInt8]) throws(VarlinkClientError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer -> Int in
                // Safe: the loop only runs for a non-empty array, whose base address exists.
                guard let base = buffer.baseAddress else { return 0 }
                // send, not write: MSG_NOSIGNAL turns a closed peer into EPIPE instead of SIGPIPE.
                return Glibc.send(fd, base + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw .closed
            }
        }
    }

    /// Waits for the next reply.
    public func receive() throws(VarlinkClientError) -> VarlinkReply {
        let frame = try receiveFrame()
        do {
            return try VarlinkReply(frame: frame)
        } catch {
            throw .protocolViolation(error.reason)
        }
    }

    /// The next raw NUL-terminated frame (without the NUL).
    public func receiveFrame() throws(VarlinkClientError) -> ArraySlice<UInt8> {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            do {
                if let frame = try reader.nextFrame() {
                    reader.compact()
                    return frame
                }
            } catch {
                throw .protocolViolation(error.reason)
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw .timedOut(seconds: Self.seconds(timeout)) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let millis = Int32(min(Self.seconds(remaining) * 1000 + 1, 2_000_000_000))
            let ready = poll(&poller, 1, millis)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                buffer.withUnsafeBytes { reader.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw .closed
            }
        }
    }

    /// One call, one reply (error replies are returned, not thrown).
    public func call(_ method: String, _ parameters: JSONValue = [:]) throws(VarlinkClientError) -> VarlinkReply {
        try send(VarlinkCall(method: method, parameters: parameters))
        return try receive()
    }

    /// A `more` call: `onReply` sees each reply until the last (or an error reply).
    public func stream(
        _ method: String, _ parameters: JSONValue = [:], onReply: (VarlinkReply) throws -> Void
    ) throws {
        try send(VarlinkCall(method: method, parameters: parameters, more: true))
        while true {
            let reply = try receive()
            try onReply(reply)
            if !reply.continues || reply.error != nil { return }
        }
    }

    /// The socket, for callers that multiplex several clients with poll().
    public var fileDescriptor: Int32 { fd }

    /// Reads whatever the socket has now (one read; blocks only if nothing is there).
    public func fill() throws(VarlinkClientError) {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n > 0 {
            buffer.withUnsafeBytes { reader.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        } else if !(n < 0 && errno == EINTR) {
            throw .closed
        }
    }

    /// Whether the socket has something to read (or has closed) within `milliseconds`.
    public func isReadable(milliseconds: Int32 = 0) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, milliseconds) > 0
    }

    /// A reply already read by `fill`, if a whole one is there.
    public func nextBufferedReply() throws(VarlinkClientError) -> VarlinkReply? {
        do {
            guard let frame = try reader.nextFrame() else {
                reader.compact()
                return nil
            }
            return try VarlinkReply(frame: frame)
        } catch {
            throw .protocolViolation(error.reason)
        }
    }

    /// Shuts down the sending side (the server answers what it has, then closes).
    public func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    static func seconds(_ d: Duration) -> Double { d.inSeconds }
}
