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
/// Blocking sockets on threads of their own (one accepting, one per delivery, at most
/// `maxConcurrent`), each read and write bounded by `ioTimeout`, so a slow client never holds
/// more than its own thread and never touches the cooperative pool.
struct WebhookListener: Service {
    let address: String
    let maxBodyBytes: Int
    let service: PaymentsService
    let logger: Logger
    var maxConcurrent = 16
    var ioTimeoutMilliseconds: Int32 = 10_000

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

/// The accepting thread and the count of deliveries in flight.
final class AcceptLoop: Sendable {
    let fd: Int32
    let listener: WebhookListener
    private let stopped = Atomic<Bool>(false)
    private let active = Atomic<Int>(0)

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
            guard active.add(1, ordering: .acquiringAndReleasing).newValue <= listener.maxConcurrent else {
                active.subtract(1, ordering: .acquiringAndReleasing)
                HTTPExchange.respond(connection, 503, ["error": "Busy", "reason": "too many webhook deliveries in flight; retry"])
                close(connection)
                continue
            }
            let listener = self.listener
            let thread = OSThread.start(name: "appd-webhook") { [self] in
                HTTPExchange(fd: connection, listener: listener).serve()
                close(connection)
                active.subtract(1, ordering: .acquiringAndReleasing)
            }
            pthread_detach(thread)
        }
    }

    /// Lets deliveries in flight finish (bounded) before the listener reports itself stopped.
    func waitForDeliveries(timeoutMilliseconds: Int) {
        var waited = 0
        while active.load(ordering: .acquiring) > 0 && waited < timeoutMilliseconds {
            usleep(10_000)
            waited += 10
        }
    }
}
