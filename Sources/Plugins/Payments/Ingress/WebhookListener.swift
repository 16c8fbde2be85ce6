#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import Synchronization

/// The optional HTTP webhook listener: `POST /webhooks/<provider>` on a loopback address,
/// meant to sit behind a TLS-terminating reverse proxy. It answers 200 only after the event
/// is stored, 400 when verification or decoding fails, 404 for an unknown provider or path,
/// 405 for another method, 411 without a Content-Length, 413 for a body over the limit, 503
/// when the database is unavailable or too many deliveries are in flight.
///
/// Blocking sockets on threads of their own (one accepting, one per connection), so a slow
/// client never touches the cooperative pool. A request must arrive whole (head and body)
/// within `requestTimeout`; at most `maxReading` connections may be reading at once, and a new
/// one displaces the one that has been reading longest, so slow clients (slowloris) can never
/// keep a real delivery out. Storing is limited separately, to `maxConcurrent` at once.
struct WebhookListener: Service {
    let address: String
    let maxBodyBytes: Int
    let service: PaymentsService
    let logger: Logger
    var maxConcurrent = 16
    var maxReading = 64
    var ioTimeoutMilliseconds: Int32 = 10_000
    var requestTimeoutMilliseconds = 10_000

    var name: String { "payments.webhooks" }

    func run() async throws {
        let (host, port) = try Self.split(address)
        let fd = appd_tcp_listen(host, port, 64, 1)
        if fd == -2 { throw WebhookListenerError("\(address) is not a loopback address; bind the listener to 127.0.0.1 or ::1 and put a reverse proxy in front") }
        guard fd >= 0 else { throw WebhookListenerError("cannot listen on \(address): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bound = Int(appd_tcp_port(fd))
        logger.notice("webhook listener ready", metadata: ["address": "\(host):\(bound)"])
        let loop = AcceptLoop(fd: fd, listener: self)
        await withTaskCancellationHandler {
            await OSThread.run { loop.run() }
        } onCancel: {
            loop.stop()
        }
        loop.waitForDeliveries(timeoutMilliseconds: 5_000)
    }

    /// `127.0.0.1:8787`, `[::1]:8787` → host and port.
    static func split(_ address: String) throws(WebhookListenerError) -> (String, UInt16) {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw WebhookListenerError("webhookListen '\(address)' needs the form 127.0.0.1:8787")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }
}

/// The listener cannot start; says what to change.
struct WebhookListenerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The accepting thread, the connections still reading their request, and the count of
/// deliveries being stored.
final class AcceptLoop: Sendable {
    let fd: Int32
    let listener: WebhookListener
    private let stopped = Atomic<Bool>(false)
    private let active = Atomic<Int>(0)
    private let threads = Atomic<Int>(0)
    /// Connections reading their request, with when they started.
    private let reading = Mutex<[Int32: ContinuousClock.Instant]>([:])

    init(fd: Int32, listener: WebhookListener) {
        self.fd = fd
        self.listener = listener
    }

    func stop() { stopped.store(true, ordering: .releasing) }

    func run() {
        while !stopped.load(ordering: .acquiring) {
            guard appd_wait_readable(fd, 200) == 1 else { continue }
            let connection = appd_accept_blocking(fd)
            guard connection >= 0 else { continue }
            _ = appd_set_timeouts(connection, listener.ioTimeoutMilliseconds)
            admit(connection)
            threads.add(1, ordering: .acquiringAndReleasing)
            let thread = OSThread.start(name: "appd-webhook") { [self] in
                HTTPExchange(fd: connection, listener: listener, loop: self).serve()
                finishedReading(connection)
                close(connection)
                threads.subtract(1, ordering: .acquiringAndReleasing)
            }
            pthread_detach(thread)
        }
    }

    /// Counts `connection` as reading; when `maxReading` are, the one reading longest is cut off.
    private func admit(_ connection: Int32) {
        reading.withLock { table in
            if table.count >= listener.maxReading, let oldest = table.min(by: { $0.value < $1.value })?.key {
                table[oldest] = nil
                // Under the lock on purpose: its thread closes the descriptor only after taking
                // this lock, so the number cannot have been reused by another connection yet.
                shutdown(oldest, Int32(SHUT_RDWR))
            }
            table[connection] = .now
        }
    }

    /// The request has arrived (or the connection is done): it can no longer be cut off.
    func finishedReading(_ connection: Int32) {
        reading.withLock { _ = $0.removeValue(forKey: connection) }
    }

    /// Takes one of the `maxConcurrent` storing slots; false when all are taken.
    func beginDelivery() -> Bool {
        guard active.add(1, ordering: .acquiringAndReleasing).newValue <= listener.maxConcurrent else {
            active.subtract(1, ordering: .acquiringAndReleasing)
            return false
        }
        return true
    }

    func endDelivery() { active.subtract(1, ordering: .acquiringAndReleasing) }

    /// Lets connections in flight finish (bounded) before the listener reports itself stopped.
    func waitForDeliveries(timeoutMilliseconds: Int) {
        var waited = 0
        while threads.load(ordering: .acquiring) > 0 && waited < timeoutMilliseconds {
            usleep(10_000)
            waited += 10
        }
    }
}
