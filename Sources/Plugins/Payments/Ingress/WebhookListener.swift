// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Contracts
import CSystem
import HTTP
import Storage

/// The webhook listener of its own (`--webhook-listen`, a loopback address): the webhooks of
/// `WebhookIngress` on an `HTTPServer` that serves nothing else. Kept for deployments that set
/// it up before the app-facing HTTP server (`--http-listen`) took webhooks too.
///
/// A request must arrive whole (head and body) within `requestTimeout`; at most `maxReading`
/// connections may be reading at once, and a new one displaces the one that has been reading
/// longest, so slow clients (slowloris) can never keep a real delivery out. Storing is limited
/// separately, to `maxConcurrent` at once.
struct WebhookListener: Service {
    let address: String
    var ingress: WebhookIngress
    var maxConcurrent = 16
    var maxReading = 64
    var requestTimeout: Duration = .seconds(10)

    init(address: String, maxBodyBytes: Int, service: PaymentsService, logger: Logger) {
        self.address = address
        self.ingress = WebhookIngress(service: service, logger: logger, maxBodyBytes: maxBodyBytes)
    }

    var name: String { "payments.webhooks" }
    var deliveryTimeout: Duration {
        get { ingress.deliveryTimeout }
        set { ingress.deliveryTimeout = newValue }
    }

    func run() async throws {
        let listen: HTTPListenAddress
        do { listen = try HTTPListenAddress(address) } catch { throw WebhookListenerError("webhookListen: \(error)") }
        let (host, port) = (listen.host, listen.port)
        let fd = appd_tcp_listen(host, port, 64, 1)
        if fd == -2 { throw WebhookListenerError("\(address) is not a loopback address; bind the listener to 127.0.0.1 or ::1 and put a reverse proxy in front") }
        guard fd >= 0 else { throw WebhookListenerError("cannot listen on \(address): \(String(cString: strerror(errno)))") }
        let bound = Int(appd_tcp_port(fd))
        var limits = HTTPServerLimits()
        limits.maxHandling = maxConcurrent
        limits.maxReading = maxReading
        limits.requestTimeout = requestTimeout
        limits.maxBodyBytes = ingress.maxBodyBytes
        let ingress = self.ingress
        let server: HTTPServer
        do {
            server = try HTTPServer(name: "appd-webhooks", listenFD: fd, limits: limits, logger: ingress.logger) { request, body in
                await ingress.handle(request, body)
            }
        } catch {
            close(fd)
            throw WebhookListenerError("cannot start the webhook listener: \(error)")
        }
        ingress.logger.notice("webhook listener ready", metadata: ["address": "\(host):\(bound)"])
        await server.run()
    }

    func deliver(_ request: WebhookRequest, _ body: [UInt8]) async -> HTTPResponse { await ingress.deliver(request, body) }
}

/// The listener cannot start; says what to change.
struct WebhookListenerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
