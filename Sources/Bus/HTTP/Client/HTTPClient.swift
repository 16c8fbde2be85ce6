// SPDX-License-Identifier: Apache-2.0
import BusCore
import CNet
import Synchronization
import Runtime

/// A minimal streaming HTTP/1.1 client (plain or TLS) for the LLM providers, on an event loop:
/// one loop thread drives every request with non-blocking sockets and non-blocking OpenSSL
/// (a handshake, write or read that would block waits for epoll instead), so a thousand
/// concurrent streams are a thousand sockets, not a thousand threads. Name resolution, which
/// only exists as a blocking call, runs on a small pool. The parts of the response arrive as an
/// async stream as soon as they are read; cancelling the consumer closes the connection at
/// once (the upstream sees it closed).
public struct HTTPClient: Sendable {
    public var timeouts = HTTPTimeouts()
    /// Trusted CA certificates (PEM) instead of the system store, for private endpoints.
    public var caFile: String?
    /// The most response bytes read before the response is cut off.
    public var maxResponseBytes = 16 << 20

    public init(timeouts: HTTPTimeouts = HTTPTimeouts(), caFile: String? = nil) {
        self.timeouts = timeouts
        self.caFile = caFile
    }

    /// Sends `request`; the response's head, body chunks and end arrive on the stream. `stop`:
    /// stopping it closes the connection at once and ends the stream with `StopSignal.Stopped`
    /// (parts read before it are still delivered), as cancelling the consumer does.
    public func send(_ request: HTTPRequest, stop: StopSignal? = nil) -> AsyncThrowingStream<HTTPPart, any Error> {
        let (stream, continuation) = AsyncThrowingStream<HTTPPart, any Error>.makeStream(bufferingPolicy: .unbounded)
        let outbound: Outbound
        switch Outbound.shared {
        case .success(let shared): outbound = shared
        case .failure(let error):
            continuation.finish(throwing: HTTPFailure(stage: .connect, reason: "\(error)"))
            return stream
        }
        if stop?.isStopped == true {
            continuation.finish(throwing: StopSignal.Stopped())
            return stream
        }
        let exchange = HTTPClientExchange(request: request, client: self, outbound: outbound, continuation: continuation)
        let stopping = stop?.onStop {
            outbound.loop.execute { exchange.close() }
            continuation.finish(throwing: StopSignal.Stopped())
        }
        continuation.onTermination = { _ in
            stop?.remove(stopping)
            outbound.loop.execute { exchange.close() }
        }
        // Unstructured: the exchange outlives this synchronous call; the stream's termination closes it.
        Task { await exchange.start() }
        return stream
    }

    /// Sends `request` and collects the whole response (at most `maxResponseBytes`).
    public func fetch(_ request: HTTPRequest) async throws -> (head: HTTPHead, body: [UInt8]) {
        var head: HTTPHead?
        var body: [UInt8] = []
        for try await part in send(request) {
            switch part {
            case .head(let h): head = h
            case .body(let bytes): body += bytes
            }
        }
        guard let head else { throw HTTPFailure(stage: .response, reason: "no response head") }
        return (head, body)
    }

    /// A client whose every timeout is `limit` (a short exchange with an identity provider).
    public static func oneShot(limit: Duration, caFile: String?, maxResponseBytes: Int = 1 << 20) -> HTTPClient {
        var timeouts = HTTPTimeouts()
        timeouts.connect = limit
        timeouts.firstByte = limit
        timeouts.idle = limit
        timeouts.total = limit
        var client = HTTPClient(timeouts: timeouts, caFile: caFile)
        client.maxResponseBytes = maxResponseBytes
        return client
    }

}

/// The loop every outbound request runs on, the resolver pool, and the requests in flight
/// (whose timeouts the loop's tick checks).
final class Outbound: Sendable {
    static let shared: Result<Outbound, SocketError> = Result { () throws(SocketError) in try Outbound() }

    let loop: EventLoop
    let resolver = BlockingPool(name: "appd-dns", threads: 4, queueLimit: 256)
    let active = Mutex<[ObjectIdentifier: HTTPClientExchange]>([:])

    private init() throws(SocketError) {
        loop = try EventLoop(name: "appd-http-out")
        loop.onTick { [unowned self] now in
            for exchange in active.withLock({ Array($0.values) }) { exchange.checkTimeouts(now: now) }
        }
        loop.start()
    }
}

/// One request and its response. Everything but `start` runs on the outbound loop's thread,
/// which alone touches the connection and the phase.
final class HTTPClientExchange: @unchecked Sendable {  // safe: state is owned by the loop thread (see above)
    private enum Phase {
        case resolving
        case connecting(deadline: ContinuousClock.Instant)
        case sending(offset: Int)
        case receiving
        case done
    }
    private let request: HTTPRequest
    private let bytes: [UInt8]
    private let client: HTTPClient
    private let outbound: Outbound
    private let continuation: AsyncThrowingStream<HTTPPart, any Error>.Continuation
    private let started = ContinuousClock.now

    private var phase = Phase.resolving
    private var connection: OpaquePointer?
    private var addresses: [appd_net_address] = []
    private var decoder = HTTPResponseDecoder()
    private var received = 0
    /// When the last bytes came (nil before the first): the first-byte and idle timeouts.
    private var lastRead: ContinuousClock.Instant?
    private var sentAt: ContinuousClock.Instant?
    private var error = [CChar](repeating: 0, count: 256)

    init(request: HTTPRequest, client: HTTPClient, outbound: Outbound, continuation: AsyncThrowingStream<HTTPPart, any Error>.Continuation) {
        self.request = request
        self.bytes = request.bytes
        self.client = client
        self.outbound = outbound
        self.continuation = continuation
    }

    /// Resolves the host (on the resolver pool, within the connect timeout), then connects on the loop.
    func start() async {
        let (host, port) = (request.host, request.port)
        let resolved: Result<[appd_net_address], HTTPFailure>
        do {
            let pool = outbound.resolver
            resolved = try await withTimeout(client.timeouts.connect, timeoutError: { HTTPFailure(stage: .connect, reason: "resolving \(host) timed out") }) {
                try await pool.run { () -> Result<[appd_net_address], HTTPFailure> in
                    var out = [appd_net_address](repeating: appd_net_address(), count: 8)
                    var error = [CChar](repeating: 0, count: 256)
                    let n = appd_net_resolve(host, port, &out, Int32(out.count), &error, error.count)
                    guard n > 0 else { return .failure(HTTPFailure(stage: .connect, reason: Self.text(error))) }
                    return .success(Array(out.prefix(Int(n))))
                }
            }
        } catch let failure as HTTPFailure {
            resolved = .failure(failure)
        } catch {
            resolved = .failure(HTTPFailure(stage: .connect, reason: "\(error)"))
        }
        outbound.loop.execute { [self] in
            switch resolved {
            case .success(let list):
                guard case .resolving = phase else { return }  // cancelled meanwhile
                addresses = list
                outbound.active.withLock { $0[ObjectIdentifier(self)] = self }
                connectNext(lastReason: "no address")
            case .failure(let failure):
                fail(failure)
            }
        }
    }

    /// Tries the next resolved address.
    private func connectNext(lastReason: String) {
        dropConnection()
        guard !addresses.isEmpty else { return fail(HTTPFailure(stage: .connect, reason: lastReason)) }
        var address = addresses.removeFirst()
        guard
            let handle = request.host.withCString({ host in
                appd_net_start(&address, request.tls ? 1 : 0, host, client.caFile, &error, error.count)
            })
        else {
            return connectNext(lastReason: Self.text(error))
        }
        connection = handle
        phase = .connecting(deadline: started + client.timeouts.connect)
        outbound.loop.add(appd_net_fd(handle), events: EventLoop.writable) { [self] _, scratch in advance(&scratch) }
    }

    /// Moves the exchange on as far as the socket allows, then waits for epoll. Reads go into
    /// the loop's scratch buffer (the decoder copies what it keeps), so an exchange waiting
    /// for a slow server holds no read buffer of its own.
    private func advance(_ scratch: inout [UInt8]) {
        guard let handle = connection else { return }
        while true {
            switch phase {
            case .resolving, .done:
                return
            case .connecting:
                let r = appd_net_connect_step(handle, &error, error.count)
                if r == 1 {
                    phase = .sending(offset: 0)
                    sentAt = .now
                    continue
                }
                if r < 0 && r != APPD_NET_WANT_READ && r != APPD_NET_WANT_WRITE { return connectNext(lastReason: Self.text(error)) }
                return wait(r)
            case .sending(let offset):
                let n = bytes[offset...].withUnsafeBufferPointer { appd_net_write_step(handle, $0.baseAddress, $0.count, &error, error.count) }
                if n > 0 {
                    phase = offset + n == bytes.count ? .receiving : .sending(offset: offset + n)
                    continue
                }
                if n == APPD_NET_WANT_READ || n == APPD_NET_WANT_WRITE { return wait(Int32(n)) }
                return fail(HTTPFailure(stage: .send, reason: Self.text(error)))
            case .receiving:
                let n = scratch.withUnsafeMutableBufferPointer { appd_net_read_step(handle, $0.baseAddress, $0.count, &error, error.count) }
                if n > 0 {
                    lastRead = .now
                    received += n
                    guard received <= client.maxResponseBytes else {
                        return fail(HTTPFailure(stage: .response, reason: "the response is larger than \(client.maxResponseBytes) bytes"))
                    }
                    do throws(HTTPFailure) {
                        for part in try decoder.feed(Array(scratch[0..<n])) { continuation.yield(part) }
                    } catch {
                        return fail(error)
                    }
                    if decoder.isComplete { return finish() }
                    continue
                }
                if n == 0 {
                    guard decoder.endsAtClose else { return fail(HTTPFailure(stage: .response, reason: "the connection closed mid-response")) }
                    return finish()
                }
                if n == APPD_NET_WANT_READ || n == APPD_NET_WANT_WRITE { return wait(Int32(n)) }
                return fail(HTTPFailure(stage: .response, reason: Self.text(error)))
            }
        }
    }

    private func wait(_ want: Int32) {
        guard let handle = connection else { return }
        outbound.loop.modify(appd_net_fd(handle), events: want == APPD_NET_WANT_READ ? EventLoop.readable : EventLoop.writable)
    }

    /// The loop's tick: fails the exchange at the first timeout that has passed.
    func checkTimeouts(now: ContinuousClock.Instant) {
        let timeouts = client.timeouts
        switch phase {
        case .resolving, .done:
            return
        case .connecting(let deadline):
            if now >= deadline { fail(HTTPFailure(stage: .connect, reason: "connect timed out")) }
        case .sending, .receiving:
            if now - started >= timeouts.total { return fail(HTTPFailure(stage: .total, reason: "")) }
            if let lastRead {
                if now - lastRead >= timeouts.idle { fail(HTTPFailure(stage: .idle, reason: "")) }
            } else if let sentAt, now - sentAt >= timeouts.firstByte {
                fail(HTTPFailure(stage: .firstByte, reason: ""))
            }
        }
    }

    private func finish() {
        close()
        continuation.finish()
    }

    private func fail(_ failure: HTTPFailure) {
        close()
        continuation.finish(throwing: failure)
    }

    /// Ends the exchange (the consumer went away, or it is over): the socket is closed at once.
    func close() {
        phase = .done
        dropConnection()
        _ = outbound.active.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
    }

    private func dropConnection() {
        guard let handle = connection else { return }
        outbound.loop.remove(appd_net_fd(handle))
        appd_net_close(handle)
        connection = nil
    }

    static func text(_ error: [CChar]) -> String {
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
