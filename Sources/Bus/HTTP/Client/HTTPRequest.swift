// SPDX-License-Identifier: Apache-2.0
import BusCore
/// An outbound HTTP/1.1 request to an `http://` or `https://` URL.
public struct HTTPRequest: Sendable {
    public var tls: Bool
    public var host: String
    public var port: UInt16
    public var path: String
    public var method = "POST"
    public var headers: [(String, String)] = []
    public var body: [UInt8] = []

    /// Splits `https://api.openai.com/v1` + `/chat/completions`. Nil for anything else.
    public init?(url: String, appending suffix: String = "") {
        let tls: Bool
        var rest: Substring
        if url.hasPrefix("https://") {
            tls = true
            rest = url.dropFirst(8)
        } else if url.hasPrefix("http://") {
            tls = false
            rest = url.dropFirst(7)
        } else {
            return nil
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        var path = String(rest[slash...])
        while path.hasSuffix("/") { path.removeLast() }
        rest = authority
        var host = String(authority), port: UInt16 = tls ? 443 : 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = UInt16(after.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let p = UInt16(authority[authority.index(after: colon)...]) else { return nil }
            port = p
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "@" }) else { return nil }
        self.tls = tls
        self.host = host
        self.port = port
        self.path = (path.isEmpty ? "" : path) + suffix
        if self.path.isEmpty { self.path = "/" }
    }

    /// The request head and body as bytes.
    public var bytes: [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host.contains(":") ? "[\(host)]" : host)\(port == (tls ? 443 : 80) ? "" : ":\(port)")\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}

/// A response's status line and headers (names lower-cased).
public struct HTTPHead: Sendable, Equatable {
    public var status: Int
    public var headers: [String: String]
    public init(status: Int, headers: [String: String]) {
        self.status = status
        self.headers = headers
    }
}

/// What reading a response yields, in order: the head once, then body bytes.
public enum HTTPPart: Sendable {
    case head(HTTPHead)
    case body([UInt8])
}

/// Why a request failed; says which stage and whether any response had arrived.
public struct HTTPFailure: Error, CustomStringConvertible, Equatable {
    public enum Stage: String, Sendable { case connect, send, firstByte = "first byte", idle, total, response }
    public var stage: Stage
    public var reason: String
    public init(stage: Stage, reason: String) {
        self.stage = stage
        self.reason = reason
    }
    public var description: String {
        switch stage {
        case .connect: "cannot connect: \(reason)"
        case .send: "sending the request failed: \(reason)"
        case .firstByte: "no response within the first-byte timeout"
        case .idle: "the response stalled longer than the idle timeout"
        case .total: "the response took longer than the total timeout"
        case .response: "bad response: \(reason)"
        }
    }
}

/// The client's time limits.
public struct HTTPTimeouts: Sendable, Equatable {
    public var connect: Duration = .seconds(5)
    public var firstByte: Duration = .seconds(60)
    public var idle: Duration = .seconds(60)
    public var total: Duration = .seconds(600)
    public init() {}
}
