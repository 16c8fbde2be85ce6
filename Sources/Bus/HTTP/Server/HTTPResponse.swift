// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A response the server writes: a whole body with a Content-Length, or a body streamed in
/// chunks (`stream`, e.g. server-sent events) that ends when the stream function returns.
public struct HTTPResponse: Error, Sendable {
    public var status: Int
    /// Extra headers (Content-Type among them); the server adds Content-Length or
    /// Transfer-Encoding, Connection and Date.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Writes the body piece by piece (the head goes out first); the response ends when it
    /// returns. It is cancelled when the client goes away. (Work that decides between a plain
    /// response and a stream only once it has something to say answers through
    /// `HTTPHandling.responding` instead.)
    public var stream: (@Sendable (HTTPResponder) async -> Void)?
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
    public init(status: Int, headers: [(name: String, value: String)], stream: @escaping @Sendable (HTTPResponder) async -> Void) {
        self.init(status: status, headers: headers)
        self.stream = stream
    }

    /// The value of a header the response carries (name case-insensitive).
    public func header(_ name: String) -> String? {
        headers.last { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// A stream's status line and headers (chunked); `keepAlive` says whether the connection
    /// stays open.
    func head(keepAlive: Bool, chunked: Bool) -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out, keepAlive: keepAlive, body: false, chunked: chunked)
        return out
    }

    /// The whole response as bytes; `headOnly`: without its body (the answer to a HEAD).
    func bytes(keepAlive: Bool, headOnly: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out, keepAlive: keepAlive, headOnly: headOnly)
        return out
    }

    /// Appends the whole response to `out`: a connection writes it straight into its output
    /// buffer (no array of its own per response, and no copy of it into the buffer).
    func write(into out: inout [UInt8], keepAlive: Bool, headOnly: Bool) {
        write(into: &out, keepAlive: keepAlive, body: !headOnly, chunked: false)
    }

    /// Written straight into one buffer: this runs for every response.
    private func write(into out: inout [UInt8], keepAlive: Bool, body withBody: Bool, chunked: Bool) {
        out.reserveCapacity(out.count + 128 + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 } + (withBody ? body.count : 0))
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
        if status == 204 || status == 304 {
            // No body, and no length to announce one (RFC 9110 §8.6).
        } else if !chunked {
            out += "Content-Length: ".utf8
            out += String(body.count).utf8
            out += "\r\n".utf8
        } else {
            out += "Transfer-Encoding: chunked\r\n".utf8
        }
        out += keepAlive ? "Connection: keep-alive\r\n\r\n".utf8 : "Connection: close\r\n\r\n".utf8
        if withBody { out += body }
    }

    package static let reasons = [
        100: "Continue", 200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content", 303: "See Other", 304: "Not Modified", 400: "Bad Request", 401: "Unauthorized",
        402: "Payment Required", 403: "Forbidden",
        404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 411: "Length Required",
        410: "Gone", 412: "Precondition Failed", 413: "Payload Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content", 429: "Too Many Requests",
        416: "Range Not Satisfiable", 431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable",
        504: "Gateway Timeout",
    ]
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
/// waits), or by work the server runs in a task — returning its response, or answering through
/// an `HTTPResponder` (a stream that starts when it has something to say).
public enum HTTPHandling: Sendable {
    case now(HTTPResponse)
    case later(@Sendable () async -> HTTPResponse)
    case responding(@Sendable (HTTPResponder) async -> Void)
}
