#if canImport(Glibc)
import Glibc
#endif
import Bus
import CNet
import Synchronization

/// A minimal streaming HTTP/1.1 client (plain or TLS) for the LLM providers. Each request
/// holds a thread of the client's pool with blocking, timeout-bounded I/O (at most
/// `pool.threads` requests at once; one more is refused, not queued); the parts of the response
/// arrive as an async stream as soon as they are read. Cancelling the consumer aborts the
/// connection at once (the upstream sees it closed).
public struct HTTPClient: Sendable {
    public static let pool = BlockingPool(name: "appd-llm-http", threads: 1024, queueLimit: 0)
    public var timeouts = HTTPTimeouts()
    /// Trusted CA certificates (PEM) instead of the system store, for private endpoints.
    public var caFile: String?
    /// The most response bytes read before the response is cut off.
    public var maxResponseBytes = 16 << 20

    public init(timeouts: HTTPTimeouts = HTTPTimeouts(), caFile: String? = nil) {
        self.timeouts = timeouts
        self.caFile = caFile
    }

    public func send(_ request: HTTPRequest) -> AsyncThrowingStream<HTTPPart, any Error> {
        let (stream, continuation) = AsyncThrowingStream<HTTPPart, any Error>.makeStream(bufferingPolicy: .unbounded)
        let connection = Connection()
        continuation.onTermination = { _ in connection.abort() }
        let client = self
        do throws(PoolRefusal) {
            try Self.pool.submit {
                do throws(HTTPFailure) {
                    try client.exchange(request, connection) { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
                connection.close()
            }
        } catch {
            continuation.finish(throwing: HTTPFailure(stage: .connect, reason: "\(error)"))
        }
        return stream
    }

    /// Connects, sends, reads; calls `deliver` for each part. Runs on the request's thread.
    private func exchange(_ request: HTTPRequest, _ connection: Connection, deliver: (HTTPPart) -> Void) throws(HTTPFailure) {
        let started = ContinuousClock.now
        var error = [CChar](repeating: 0, count: 256)
        func reason() -> String { String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        let handle = request.host.withCString { host in
            appd_net_connect(host, request.port, request.tls ? 1 : 0, caFile, Self.milliseconds(timeouts.connect), &error, error.count)
        }
        guard let handle else { throw HTTPFailure(stage: .connect, reason: reason()) }
        guard connection.attach(handle) else { throw HTTPFailure(stage: .connect, reason: "cancelled") }
        let bytes = request.bytes
        guard appd_net_write(handle, bytes, bytes.count, Self.milliseconds(timeouts.firstByte), &error, error.count) == 0 else {
            throw HTTPFailure(stage: .send, reason: reason())
        }
        var decoder = HTTPResponseDecoder()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var received = 0
        var first = true
        while !decoder.isComplete {
            let elapsed = ContinuousClock.now - started
            guard elapsed < timeouts.total else { throw HTTPFailure(stage: .total, reason: "") }
            let wait = min(first ? timeouts.firstByte : timeouts.idle, timeouts.total - elapsed)
            let n = buffer.withUnsafeMutableBufferPointer { appd_net_read(handle, $0.baseAddress, $0.count, Self.milliseconds(wait), &error, error.count) }
            switch n {
            case 0:
                guard decoder.endsAtClose else { throw HTTPFailure(stage: .response, reason: "the connection closed mid-response") }
                return
            case -2:
                let total = ContinuousClock.now - started >= timeouts.total
                throw HTTPFailure(stage: total ? .total : first ? .firstByte : .idle, reason: "")
            case -3:
                throw HTTPFailure(stage: .response, reason: "cancelled")
            case ..<0:
                throw HTTPFailure(stage: .response, reason: reason())
            default:
                first = false
                received += n
                guard received <= maxResponseBytes else { throw HTTPFailure(stage: .response, reason: "the response is larger than \(maxResponseBytes) bytes") }
                for part in try decoder.feed(Array(buffer[0..<n])) { deliver(part) }
            }
        }
    }

    public static func milliseconds(_ d: Duration) -> Int32 {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, ms))
    }

    /// The connection handle, shared by the reading thread and whoever cancels.
    public final class Connection: Sendable {
        private struct State: @unchecked Sendable {  // safe: the pointer is only used under the lock or by the owning thread
            var handle: OpaquePointer?
            var aborted = false
        }
        private let state = Mutex(State())

        /// Returns false (and closes the handle) when already aborted.
        func attach(_ handle: OpaquePointer) -> Bool {
            let ok = state.withLock { s -> Bool in
                guard !s.aborted else { return false }
                s.handle = handle
                return true
            }
            if !ok { appd_net_close(handle) }
            return ok
        }

        func abort() {
            state.withLock { s in
                s.aborted = true
                if let handle = s.handle { appd_net_abort(handle) }
            }
        }

        func close() {
            let handle = state.withLock { s -> OpaquePointer? in
                defer { s.handle = nil }
                return s.handle
            }
            if let handle { appd_net_close(handle) }
        }
    }
}
