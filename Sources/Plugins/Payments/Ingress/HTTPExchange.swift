#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import Dispatch
import Storage
import Synchronization

/// One HTTP/1.1 request and its response on a blocking socket (the connection is closed after).
struct HTTPExchange {
    let fd: Int32
    let listener: WebhookListener
    let loop: AcceptLoop
    static let maxHeaderBytes = 16 * 1024

    func serve() {
        // The whole request (head and body) must arrive by this deadline, however it trickles.
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(listener.requestTimeoutMilliseconds))
        /// Bounds the next read by what is left of the deadline; false once it has passed.
        func beforeRead() -> Bool {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            _ = appd_set_timeouts(fd, Int32(clamping: max(1, milliseconds)))
            return true
        }
        let tooSlow: JSONValue = ["error": "RequestTimeout", "reason": "the request did not arrive whole in time"]
        var buffer: [UInt8] = []
        var headerEnd: Int?
        var chunk = [UInt8](repeating: 0, count: 8192)
        while headerEnd == nil {
            guard buffer.count < Self.maxHeaderBytes else { return Self.respond(fd, 431, ["error": "HeadersTooLarge", "reason": "the request head is over 16 KiB"]) }
            guard beforeRead() else { return Self.respond(fd, 408, tooSlow) }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }  // closed, cut off for a newer connection, or out of time
            buffer += chunk[0..<n]
            headerEnd = buffer.firstRange(of: [13, 10, 13, 10])?.lowerBound
        }
        guard let headerEnd else { return }
        let request: WebhookRequest
        switch WebhookRequest.parse(head: buffer[0..<headerEnd], maxBodyBytes: listener.maxBodyBytes) {
        case .success(let parsed): request = parsed
        case .failure(let refusal): return Self.respond(fd, refusal.status, refusal.json)
        }
        let (provider, headers, length) = (request.provider, request.headers, request.contentLength)
        if request.expectsContinue { Self.write(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
        var body = Array(buffer[(headerEnd + 4)...])
        while body.count < length {
            guard beforeRead() else { return Self.respond(fd, 408, tooSlow) }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, length - body.count), 0) }
            guard n > 0 else { return }
            body += chunk[0..<n]
        }
        loop.finishedReading(fd)
        _ = appd_set_timeouts(fd, listener.ioTimeoutMilliseconds)
        guard loop.beginDelivery() else {
            return Self.respond(fd, 503, ["error": "Busy", "reason": "too many webhook deliveries in flight; retry"])
        }
        defer { loop.endDelivery() }
        guard body.count == length else { return Self.respond(fd, 400, ["error": "BadRequest", "reason": "more bytes than Content-Length"]) }
        guard let text = String(validating: body, as: UTF8.self) else {
            return Self.respond(fd, 400, ["error": "MalformedEvent", "reason": "the body is not UTF-8"])
        }
        let (status, reply) = deliver(provider: provider, headers: headers, body: text)
        Self.respond(fd, status, reply)
    }

    /// Stores the event (async) and waits, bounded, for the outcome.
    private func deliver(provider: String, headers: [String: String], body: String) -> (Int, JSONValue) {
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let service = listener.service
        let logger = listener.logger
        Task {
            do {
                let ingested = try await service.ingest(provider: provider, headers: headers, body: body)
                var reply: [String: JSONValue] = ["eventId": .string(ingested.eventId), "duplicate": .bool(ingested.duplicate)]
                if let warning = ingested.warning {
                    reply["warning"] = .string(warning)
                    logger.warning("webhook event for no account", metadata: ["provider": provider, "event.id": ingested.eventId, "reason": warning])
                }
                outcome.set((200, .object(reply)))
            } catch let error as PaymentsError {
                let status = error.kind == .unknownProvider ? 404 : 400
                outcome.set((status, ["error": .string(error.wireName), "reason": .string(error.description)]))
            } catch let error as StorageError {
                outcome.set((503, ["error": .string("Unavailable"), "reason": .string("the event was not stored (\(error)); retry")]))
            } catch {
                outcome.set((500, ["error": .string("Internal"), "reason": .string("the event was not stored; retry")]))
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(30)) == .success, let result = outcome.get() else {
            return (503, ["error": "Unavailable", "reason": "storing the event took too long; retry"])
        }
        if result.0 != 200 { listener.logger.warning("webhook refused", metadata: ["provider": provider, "status": "\(result.0)"]) }
        return result
    }

    static func respond(_ fd: Int32, _ status: Int, _ body: JSONValue) {
        let reasons = [
            200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 411: "Length Required", 413: "Payload Too Large",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable",
        ]
        let payload = JSONWriter.bytes(body)
        var head = "HTTP/1.1 \(status) \(reasons[status] ?? "Error")\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\n"
        if status == 503 { head += "Retry-After: 1\r\n" }
        head += "Connection: close\r\n\r\n"
        write(fd, Array(head.utf8) + payload)
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }

}

/// The delivery's result, handed from the async task to the waiting thread.
final class Outcome: Sendable {
    private let value = Mutex<(Int, JSONValue)?>(nil)
    func set(_ result: (Int, JSONValue)) { value.withLock { $0 = result } }
    func get() -> (Int, JSONValue)? { value.withLock { $0 } }
}
