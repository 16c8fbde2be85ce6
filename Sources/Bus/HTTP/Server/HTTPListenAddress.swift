// SPDX-License-Identifier: Apache-2.0
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// `127.0.0.1:8080` or `[::1]:8080`: where a server listens.
public struct HTTPListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    /// An address already checked (a bound socket's).
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init(_ text: String) throws(HTTPListenError) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw HTTPListenError("'\(text)' needs the form 127.0.0.1:8080 or [::1]:8080")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = in_addr(), v6 = in6_addr()
        guard inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 else {
            throw HTTPListenError("'\(host)' is not an IP address (use 127.0.0.1, ::1, or the address of an interface)")
        }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether only this machine can connect.
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    /// A listening socket (close-on-exec, blocking until the server makes it non-blocking).
    public func listen(backlog: Int32 = 511) throws(HTTPListenError) -> Int32 {
        let fd = appd_tcp_listen(host, port, backlog, 0)
        guard fd >= 0 else { throw HTTPListenError("cannot listen on \(self): \(String(cString: strerror(errno)))") }
        return fd
    }
}

/// A listen address is malformed or cannot be bound; says what to change.
public struct HTTPListenError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
