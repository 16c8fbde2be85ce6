// SPDX-License-Identifier: Apache-2.0
import Bus
import CSystem
import Glibc
import Synchronization

/// An OpenAI-compatible Chat Completions server on loopback, scripted per connection, that
/// records each request and when the client closed the connection.
final class FakeOpenAIServer: Sendable {
    enum Step: Sendable {
        case send([UInt8])
        case sendBytewise([UInt8])
        case pause(milliseconds: Int)
        /// Keeps the connection open, reading, until the client closes it or `milliseconds` pass.
        case holdOpen(milliseconds: Int)
    }

    struct Record: Sendable {
        var request: String
        var clientClosedAt: ContinuousClock.Instant?
    }

    let port: Int
    private let fd: Int32
    private let records = Mutex<[Record]>([])
    private let script: @Sendable (Int) -> [Step]
    private let stopped = Atomic<Bool>(false)
    /// The accepting loop and one blocking job per connection.
    private let threads = BlockingPool(name: "fake-openai", threads: 64, queueLimit: 64)

    init(script: @escaping @Sendable (_ connection: Int) -> [Step]) {
        fd = appd_tcp_listen("127.0.0.1", 0, 16, 1)
        precondition(fd >= 0, "cannot listen")
        port = Int(appd_tcp_port(fd))
        self.script = script
        try! threads.submit { [self] in acceptLoop() }
    }

    var baseURL: String { "http://127.0.0.1:\(port)/v1" }
    var requests: [Record] { records.withLock { $0 } }

    func stop() {
        stopped.store(true, ordering: .releasing)
    }

    private func acceptLoop() {
        var index = 0
        while !stopped.load(ordering: .acquiring) {
            guard appd_wait_readable(fd, 100) == 1 else { continue }
            let connection = appd_accept_blocking(fd)
            guard connection >= 0 else { continue }
            let n = index
            index += 1
            do { try threads.submit { [self] in serve(connection, n) } } catch { close(connection) }
        }
        close(fd)
    }

    private func serve(_ connection: Int32, _ index: Int) {
        defer { close(connection) }
        // Read the head and the body (Content-Length).
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            data += chunk[0..<n]
            if let end = data.firstRange(of: [13, 10, 13, 10])?.lowerBound {
                let head = String(decoding: data[..<end], as: UTF8.self).lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingWhitespace()) } ?? 0
                if data.count - (end + 4) >= length { break }
            }
        }
        let slot = records.withLock { r -> Int in
            r.append(Record(request: String(decoding: data, as: UTF8.self)))
            return r.count - 1
        }
        for step in script(index) {
            switch step {
            case .send(let bytes):
                guard write(connection, bytes) else { return }
            case .sendBytewise(let bytes):
                for byte in bytes {
                    guard write(connection, [byte]) else { return }
                    usleep(200)
                }
            case .pause(let ms):
                usleep(UInt32(ms) * 1000)
            case .holdOpen(let ms):
                let deadline = ContinuousClock.now + .milliseconds(ms)
                while ContinuousClock.now < deadline {
                    guard appd_wait_readable(connection, 20) == 1 else { continue }
                    let n = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                    if n <= 0 {
                        let now = ContinuousClock.now
                        records.withLock { $0[slot].clientClosedAt = now }
                        return
                    }
                }
            }
        }
    }

    private func write(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    // MARK: Response pieces

    static func head(status: Int = 200, chunked: Bool = true, extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 \(status) X\r\nContent-Type: text/event-stream\r\n\(chunked ? "Transfer-Encoding: chunked\r\n" : "")\(extra)\r\n".utf8)
    }

    /// One chunk of a chunked body.
    static func chunk(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + Array("\r\n".utf8)
    }

    static let end: [UInt8] = Array("0\r\n\r\n".utf8)

    static func delta(_ text: String) -> String {
        let json = String(decoding: JSONWriter.bytes(["choices": [["index": 0, "delta": ["content": .string(text)]]]]), as: UTF8.self)
        return "data: \(json)\n\n"
    }

    static let usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n"
    static let done = "data: [DONE]\n\n"

    /// A complete, normal streamed reply, as a close-delimited body.
    static func reply(_ words: [String]) -> [UInt8] {
        Array((words.map(delta).joined() + usage + done).utf8)
    }

    static func error(status: Int, retryAfter: Int? = nil) -> [UInt8] {
        let body = #"{"error":{"message":"slow down","type":"rate_limit"}}"#
        return Array(
            "HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(retryAfter.map { "Retry-After: \($0)\r\n" } ?? "")\r\n\(body)".utf8)
    }
}
