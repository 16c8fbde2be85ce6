import BusCore

/// A response the server writes: a whole body with a Content-Length, or a body streamed in
/// chunks (`stream`, e.g. server-sent events) that ends when the stream function returns.
public struct HTTPResponse: Error, Sendable {
    public var status: Int
    /// Extra headers (Content-Type among them); the server adds Content-Length or
    /// Transfer-Encoding, Connection and Date.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Writes the body piece by piece; the response ends when it returns. It is cancelled when
    /// the client goes away.
    public var stream: (@Sendable (HTTPStreamWriter) async -> Void)?
    /// Close the connection after this response even if the client would keep it.
    public var closes = false

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body.
    public init(status: Int, body: JSONValue, headers: [(name: String, value: String)] = []) {
        self.init(status: status, headers: [("Content-Type", "application/json")] + headers, body: JSONWriter.bytes(body))
        if status == 503 && !headers.contains(where: { $0.name.lowercased() == "retry-after" }) { self.headers.append(("Retry-After", "1")) }
    }

    /// A streamed body.
    public init(status: Int, headers: [(name: String, value: String)], stream: @escaping @Sendable (HTTPStreamWriter) async -> Void) {
        self.init(status: status, headers: headers)
        self.stream = stream
    }

    /// The value of a header the response carries (name case-insensitive).
    public func header(_ name: String) -> String? {
        headers.last { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The status line and headers; `keepAlive` says whether the connection stays open.
    func head(keepAlive: Bool) -> [UInt8] { bytes(keepAlive: keepAlive, body: false) }

    /// The whole response as bytes (no stream).
    func bytes(keepAlive: Bool) -> [UInt8] { bytes(keepAlive: keepAlive, body: true) }

    /// Written straight into one buffer: this runs for every response.
    private func bytes(keepAlive: Bool, body withBody: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 } + (withBody ? body.count : 0))
        out += "HTTP/1.1 ".utf8
        out += String(status).utf8
        out.append(32)
        out += (Self.reasons[status] ?? "Status \(status)").utf8
        out += "\r\n".utf8
        for (name, value) in headers {
            out += name.utf8
            out += ": ".utf8
            out += value.utf8
            out += "\r\n".utf8
        }
        if stream == nil {
            out += "Content-Length: ".utf8
            out += String(body.count).utf8
            out += "\r\n".utf8
        } else {
            out += "Transfer-Encoding: chunked\r\n".utf8
        }
        out += keepAlive ? "Connection: keep-alive\r\n\r\n".utf8 : "Connection: close\r\n\r\n".utf8
        if withBody { out += body }
        return out
    }

    package static let reasons = [
        100: "Continue", 200: "OK", 204: "No Content", 303: "See Other", 400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden",
        404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 411: "Length Required",
        410: "Gone", 412: "Precondition Failed", 413: "Payload Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content", 429: "Too Many Requests",
        431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable",
        504: "Gateway Timeout",
    ]
}

/// Writes a streamed body: each `write` becomes one chunk. A write waits while more than the
/// server's stream buffer is unsent (a client that reads slowly slows the stream, it does not
/// grow appd's memory) and throws once the client is gone or stopped reading for longer than
/// the write timeout.
public struct HTTPStreamWriter: Sendable {
    /// nil: the response could not start (the client left, or too many streams); every write
    /// throws, so the stream function ends and cleans up at once.
    let connection: HTTPServerConnection?
    let server: HTTPServer

    public func write(_ bytes: [UInt8]) async throws(HTTPStreamClosed) {
        guard let connection else { throw HTTPStreamClosed() }
        guard !bytes.isEmpty else { return }
        try await server.enqueue(Self.chunk(bytes), on: connection)
    }

    /// Queues `bytes` without waiting, from any thread (a publisher's: the fan-out path),
    /// unless the client has the stream buffer's worth unread or has gone: false then, and
    /// nothing was written (use `write`).
    public func writeIfBelowHighWater(_ bytes: [UInt8]) -> Bool {
        guard let connection, !bytes.isEmpty else { return false }
        return connection.channel.writeIfBelowHighWater { $0 += Self.chunk(bytes) }
    }

    /// One chunk of the chunked transfer coding.
    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10]
    }

    public func write(_ text: String) async throws(HTTPStreamClosed) { try await write(Array(text.utf8)) }
}

/// The client of a streamed response went away or stopped reading.
public struct HTTPStreamClosed: Error, CustomStringConvertible {
    public var description: String { "the client closed the stream or stopped reading" }
}

extension HTTPResponse {
    /// The one shape of every error body appd's HTTP server and API send: the error's name and
    /// its parameters, here just why (`{"error": "Busy", "parameters": {"reason": "…"}}`).
    public static func errorBody(_ error: String, reason: String) -> JSONValue {
        ["error": .string(error), "parameters": ["reason": .string(reason)]]
    }

    /// A refusal with that body.
    public static func refusal(_ status: Int, _ error: String, reason: String) -> HTTPResponse {
        HTTPResponse(status: status, body: errorBody(error, reason: reason))
    }
}

/// How a request is answered: at once, on the server's loop thread (a handler that never
/// waits), or by work the server runs in a task.
public enum HTTPHandling: Sendable {
    case now(HTTPResponse)
    case later(@Sendable () async -> HTTPResponse)
}
