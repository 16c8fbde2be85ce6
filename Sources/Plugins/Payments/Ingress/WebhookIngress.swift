// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import HTTP
import Storage

/// Takes provider webhooks over HTTP: `POST /webhooks/<provider>`, routes of the app-facing HTTP
/// server (`--http-listen`; the listener of its own Payments once had is gone). It answers
/// 200 only after the event is stored, 400 when verification or decoding fails, 404 for an
/// unknown provider or path, 405 for another method, 411 without a Content-Length, 413 for a
/// body over the limit, 503 when the database is unavailable or storing took longer than
/// `deliveryTimeout` (then the event is not stored: the provider retries).
public struct WebhookIngress: Sendable {
    let service: PaymentsService
    let logger: Logger
    public let maxBodyBytes: Int
    var deliveryTimeout: Duration = .seconds(30)

    /// Routes and delivers one request the HTTP server read.
    public func handle(_ request: HTTPServerRequest, _ body: [UInt8]) async -> HTTPResponse {
        switch WebhookRequest.route(request) {
        case .failure(let refusal): return refusal.response
        case .success(let webhook):
            guard body.count <= maxBodyBytes else {
                return HTTPRefusal(status: 413, error: "PayloadTooLarge", reason: "the body is over \(maxBodyBytes) bytes").response
            }
            return await deliver(webhook, body)
        }
    }

    /// Stores the event, bounded by `deliveryTimeout`: past it the provider hears 503 and the
    /// event is not stored (`withDeadline` rolls a late write back), so it retries cleanly.
    func deliver(_ request: WebhookRequest, _ body: [UInt8]) async -> HTTPResponse {
        guard let text = String(validating: body, as: UTF8.self) else {
            return HTTPResponse.refusal(400, "MalformedEvent", reason: "the body is not UTF-8")
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
            let status = if case .unknownProvider = error { 404 } else { 400 }
            response = HTTPResponse.refusal(status, error.wireName, reason: error.description)
        } catch let error as StorageError {
            response = HTTPResponse.refusal(503, "Unavailable", reason: "the event was not stored (\(error)); retry")
        } catch is DeliveryTooSlow {
            response = HTTPResponse.refusal(503, "Unavailable", reason: "storing the event took too long; it was not stored; retry")
        } catch {
            response = HTTPResponse.refusal(500, "Internal", reason: "the event was not stored; retry")
        }
        logger.warning("webhook refused", metadata: ["provider": provider, "status": "\(response.status)"])
        return response
    }

    private struct DeliveryTooSlow: Error {}
}
