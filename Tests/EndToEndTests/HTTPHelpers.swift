// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP port nothing listens on now.
func freeTCPPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw HTTPHelperError(reason: "no free port") }
    return UInt16(bigEndian: address.sin_port)
}

struct HTTPHelperError: Error { let reason: String }

/// Runs blocking `work` on a thread of its own: a blocking `recv` on the test runner's
/// cooperative threads (two on this machine) stalls every other test's tasks meanwhile, and
/// timing checks elsewhere then fail.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// One HTTP/1.1 request with `Connection: close` on a fresh connection (on a thread of its
/// own, off the cooperative threads); the status and the body.
func httpRequest(
    port: UInt16, _ method: String, path: String, body: String = "", token: String? = nil, headers: [(String, String)] = []
) async throws -> (status: Int, body: String) {
    try await onThread {
        let fd = try connectTCP(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n" + body).utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += chunk[0..<n]
        }
        let text = String(decoding: data, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let bodyStart = text.firstRange(of: "\r\n\r\n")?.upperBound ?? text.endIndex
        return (status, String(text[bodyStart...]))
    }
}

/// A TCP connection to 127.0.0.1:`port`; `receiveBuffer` sets SO_RCVBUF before connecting.
func connectTCP(port: UInt16, receiveBuffer: Int32? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else {
        close(fd)
        throw HTTPHelperError(reason: "cannot connect to port \(port)")
    }
    return fd
}

func httpPost(port: UInt16, path: String, body: String, token: String? = nil, headers: [(String, String)] = []) async throws -> (status: Int, body: String) {
    try await httpRequest(port: port, "POST", path: path, body: body, token: token, headers: headers)
}

func httpGet(port: UInt16, path: String) async throws -> String {
    try await httpRequest(port: port, "GET", path: path).body
}
