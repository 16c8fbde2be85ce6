#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import HTTP
import Storage

/// The optional HTTP webhook listener: `POST /webhooks/<provider>` on a loopback address,
/// meant to sit behind a TLS-terminating reverse proxy. It answers 200 only after the event
/// is stored, 400 when verification or decoding fails, 404 for an unknown provider or path,
/// 405 for another method, 411 without a Content-Length, 413 for a body over the limit, 503
/// when the database is unavailable, storing took longer than `deliveryTimeout` (then the
/// event is not stored: the provider retries), or too many deliveries are in flight.
///
/// An `HTTPServer` on an event loop of its own: a slow client holds no thread. A request must
/// arrive whole (head and body) within `requestTimeout`; at most `maxReading` connections may
/// be reading at once, and a new one displaces the one that has been reading longest, so slow
/// clients (slowloris) can never keep a real delivery out. Storing is limited separately, to
/// `maxConcurrent` at once.
struct WebhookListener: Service {
    let address: String
    let maxBodyBytes: Int
    let service: PaymentsService
    let logger: Logger
    var maxConcurrent = 16
    var maxReading = 64
    var requestTimeout: Duration = .seconds(10)
    var deliveryTimeout: Duration = .seconds(30)

    var name: String { "payments.webhooks" }

    func run() async throws {
        let (host, port) = try Self.split(address)
        let fd = appd_tcp_listen(host, port, 64, 1)
        if fd == -2 { throw WebhookListenerError("\(address) is not a loopback address; bind the listener to 127.0.0.1 or ::1 and put a reverse proxy in front") }
        guard fd >= 0 else { throw WebhookListenerError("cannot listen on \(address): \(String(cString: strerror(errno)))") }
        let bound = Int(appd_tcp_port(fd))
        var limits = HTTPServerLimits()
        limits.maxHandling = maxConcurrent
        limits.maxReading = maxReading
        limits.requestTimeout = requestTimeout
        let maxBodyBytes = self.maxBodyBytes
        let listener = self
        let server: HTTPServer<WebhookRequest>
        do {
            server = try HTTPServer(
                name: "appd-webhooks", listenFD: fd, limits: limits, logger: logger,
                parseHead: { head in
                    WebhookRequest.parse(head: head, maxBodyBytes: maxBodyBytes).mapError { HTTPResponse(status: $0.status, body: $0.json) }
                },
                handler: { request, body in await listener.deliver(request, body) })
        } catch {
            close(fd)
            throw WebhookListenerError("cannot start the webhook listener: \(error)")
        }
        logger.notice("webhook listener ready", metadata: ["address": "\(host):\(bound)"])
        await server.run()
    }

    /// Stores the event, bounded by `deliveryTimeout`: past it the provider hears 503 and the
    /// event is not stored (`withDeadline` rolls a late write back), so it retries cleanly.
    func deliver(_ request: WebhookRequest, _ body: [UInt8]) async -> HTTPResponse {
        guard let text = String(validating: body, as: UTF8.self) else {
            return HTTPResponse(status: 400, body: ["error": "MalformedEvent", "reason": "the body is not UTF-8"])
        }
        let (provider, headers) = (request.provider, request.headers)
        let service = self.service
        let response: HTTPResponse
        do {
            let ingested = try await withTimeout(deliveryTimeout, timeoutError: { DeliveryTooSlow() }) {
                try await service.ingest(provider: provider, headers: headers, body: text)
            }
            var reply: [String: JSONValue] = ["eventId": .string(ingested.eventId), "duplicate": .bool(ingested.duplicate)]
            if let warning = ingested.warning {
                reply["warning"] = .string(warning)
                logger.warning("webhook event for no account", metadata: ["provider": provider, "event.id": ingested.eventId, "reason": warning])
            }
            return HTTPResponse(status: 200, body: .object(reply))
        } catch let error as PaymentsError {
            response = HTTPResponse(status: error.kind == .unknownProvider ? 404 : 400, body: ["error": .string(error.wireName), "reason": .string(error.description)])
        } catch let error as StorageError {
            response = HTTPResponse(status: 503, body: ["error": "Unavailable", "reason": .string("the event was not stored (\(error)); retry")])
        } catch is DeliveryTooSlow {
            response = HTTPResponse(status: 503, body: ["error": "Unavailable", "reason": "storing the event took too long; it was not stored; retry"])
        } catch {
            response = HTTPResponse(status: 500, body: ["error": "Internal", "reason": "the event was not stored; retry"])
        }
        logger.warning("webhook refused", metadata: ["provider": provider, "status": "\(response.status)"])
        return response
    }

    private struct DeliveryTooSlow: Error {}

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

extension WebhookRequest: HTTPRequestHead {}
