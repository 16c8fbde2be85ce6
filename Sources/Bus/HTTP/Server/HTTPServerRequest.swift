// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The head of one request the server read, checked: an HTTP/1.x request line, headers, how
/// much body follows (a Content-Length; chunked request bodies are refused). A pure function
/// of the bytes, so the fuzzers call `parse` directly.
public struct HTTPServerRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent (`/v1/io.appd.Todos/Add?x=1`).
    public var target: String
    /// The target without its query.
    public var path: String
    /// The query's `name=value` pairs, percent-decoded; a repeated name keeps its last value.
    public var query: [String: String]
    /// Header names lower-cased; a repeated header keeps its last value (Content-Length,
    /// Transfer-Encoding and Authorization may not repeat).
    public var headers: HTTPHeaderFields
    public var contentLength: Int
    public var expectsContinue: Bool
    /// Whether the client keeps the connection open for another request (HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    public var keepAlive: Bool
    /// The peer's address (`127.0.0.1`, `::1`), filled in by the server.
    public var peerAddress = ""

    public init(
        method: String, target: String, headers: HTTPHeaderFields = [:], contentLength: Int = 0, expectsContinue: Bool = false,
        keepAlive: Bool = true
    ) {
        self.method = method
        self.target = target
        let (path, query) = Self.split(target)
        self.path = path
        self.query = query
        self.headers = headers
        self.contentLength = contentLength
        self.expectsContinue = expectsContinue
        self.keepAlive = keepAlive
    }

    /// `head` is everything before the blank line that ends the request head. A body is
    /// allowed up to `maxBodyBytes`; without a Content-Length a request has none.
    public static func parse(head bytes: ArraySlice<UInt8>, maxBodyBytes: Int) -> Result<HTTPServerRequest, HTTPRefusal> {
        func refuse(_ status: Int, _ error: String, _ reason: String) -> Result<HTTPServerRequest, HTTPRefusal> {
            .failure(HTTPRefusal(status: status, error: error, reason: reason))
        }
        // Nearly every head is ASCII, which is UTF-8 without decoding it.
        guard bytes.withUnsafeBufferPointer({ $0.allSatisfy { $0 < 0x80 } }) || String(validating: bytes, as: UTF8.self) != nil else {
            return refuse(400, "BadRequest", "the request head is not UTF-8")
        }
        // Lines split on CR LF, fields on bytes: no String scanning on the hot path.
        var headers = HTTPHeaderFields()
        headers.reserveCapacity(12)
        var requestLine: ArraySlice<UInt8>?
        var lineStart = bytes.startIndex
        var i = bytes.startIndex
        while lineStart <= bytes.endIndex {
            var lineEnd = bytes.endIndex
            i = lineStart
            while i < bytes.endIndex {
                if bytes[i] == 13, i + 1 < bytes.endIndex, bytes[i + 1] == 10 {
                    lineEnd = i
                    break
                }
                i += 1
            }
            let line = bytes[lineStart..<lineEnd]
            lineStart = lineEnd + 2
            guard requestLine != nil else {
                requestLine = line
                continue
            }
            guard !line.isEmpty else { continue }
            guard let colon = line.firstIndex(of: 58), colon != line.startIndex else { return refuse(400, "BadRequest", "a header line without a name and ':'") }
            let nameBytes = line[..<colon]
            guard !nameBytes.contains(where: { $0 == 32 || $0 == 9 }) else { return refuse(400, "BadRequest", "a header name with white space") }
            // Lower-cased byte by byte (the head is valid UTF-8, so the name is too).
            let name = String(unsafeUninitializedCapacity: nameBytes.count) { buffer in
                for (offset, byte) in nameBytes.enumerated() { buffer[offset] = byte >= 65 && byte <= 90 ? byte + 32 : byte }
                return nameBytes.count
            }
            var value = line[line.index(after: colon)...]
            guard !value.contains(where: { $0 == 0 || $0 == 13 || $0 == 10 }) else { return refuse(400, "BadRequest", "a control character in a header") }
            while let first = value.first, first == 32 || first == 9 { value.removeFirst() }
            while let last = value.last, last == 32 || last == 9 { value.removeLast() }
            if name == "content-length" || name == "transfer-encoding" || name == "authorization", headers[name] != nil {
                return refuse(400, "BadRequest", "\(name) appears twice")
            }
            headers[name] = String(decoding: value, as: UTF8.self)
        }
        // `METHOD SP target SP version`: exactly two spaces.
        let line = requestLine ?? []
        guard let firstSpace = line.firstIndex(of: 32), let secondSpace = line[(firstSpace + 1)...].firstIndex(of: 32),
            !line[(secondSpace + 1)...].contains(32)
        else { return refuse(400, "BadRequest", "not an HTTP/1.x request line") }
        let version = line[(secondSpace + 1)...]
        let http11 = version.elementsEqual("HTTP/1.1".utf8)
        guard http11 || version.elementsEqual("HTTP/1.0".utf8) else { return refuse(400, "BadRequest", "not an HTTP/1.x request line") }
        let method = line[..<firstSpace], target = line[(firstSpace + 1)..<secondSpace]
        guard !method.isEmpty, method.allSatisfy({ $0 >= 65 && $0 <= 90 }) else { return refuse(400, "BadRequest", "a malformed method") }
        guard target.first == 47, target.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            return refuse(400, "BadRequest", "the request target must be an absolute path of visible ASCII characters")
        }
        guard headers["transfer-encoding"] == nil else {
            return refuse(411, "LengthRequired", "send a Content-Length (chunked request bodies are not accepted)")
        }
        var length = 0
        if let lengthText = headers["content-length"] {
            guard !lengthText.isEmpty, lengthText.utf8.count <= 12, lengthText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let parsed = Int(lengthText) else {
                return refuse(400, "BadRequest", "Content-Length is not a number")
            }
            length = parsed
        } else if method.elementsEqual("POST".utf8) || method.elementsEqual("PUT".utf8) || method.elementsEqual("PATCH".utf8) {
            return refuse(411, "LengthRequired", "send a Content-Length with the body")
        }
        guard length <= maxBodyBytes else { return refuse(413, "PayloadTooLarge", "the body is over \(maxBodyBytes) bytes") }
        let connection = headers["connection"] ?? ""
        let keepAlive = http11 ? !connection.containsIgnoringASCIICase("close") : connection.containsIgnoringASCIICase("keep-alive")
        return .success(
            HTTPServerRequest(
                method: String(decoding: method, as: UTF8.self), target: String(decoding: target, as: UTF8.self), headers: headers, contentLength: length,
                expectsContinue: headers["expect"]?.lowercased() == "100-continue", keepAlive: keepAlive))
    }

    /// `/a/b?x=1&y=%20` → (`/a/b`, [x: 1, y: " "]).
    static func split(_ target: String) -> (String, [String: String]) {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (target, [:]) }
        var query: [String: String] = [:]
        for pair in target[target.utf8.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecoded(parts[0]) else { continue }
            query[name] = parts.count > 1 ? percentDecoded(parts[1]) ?? "" : ""
        }
        return (String(target[..<mark]), query)
    }

    /// Percent-decoding (`+` as a space); nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Why a request is refused before any handler sees it: the HTTP status and a JSON body in the
/// one shape every error of the HTTP API has, `{"error": …, "parameters": {"reason": …}}`.
public struct HTTPRefusal: Error, Equatable, Sendable {
    public var status: Int
    public var error: String
    public var reason: String
    public init(status: Int, error: String, reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }
    public var json: JSONValue { HTTPResponse.errorBody(error, reason: reason) }
    public var response: HTTPResponse { HTTPResponse(status: status, body: json) }
}
