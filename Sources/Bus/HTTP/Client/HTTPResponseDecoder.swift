// SPDX-License-Identifier: Apache-2.0
import BusCore

/// Turns the bytes of an HTTP/1.1 response into its head and body: Content-Length,
/// chunked transfer encoding, or a body that runs to the end of the connection. Incremental:
/// bytes may arrive split anywhere.
public struct HTTPResponseDecoder {
    public static let maxHeadBytes = 64 * 1024
    public init() {}

    private enum State {
        case head
        case body(remaining: Int?)  // nil: until the connection closes
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailer
        case done
    }

    private var state = State.head
    private var buffer: [UInt8] = []
    private var lineBuffer: [UInt8] = []

    public var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Whether the end of the connection is a proper end of this response.
    public var endsAtClose: Bool {
        switch state {
        case .done, .body(remaining: nil): true
        default: false
        }
    }

    public mutating func feed(_ bytes: [UInt8]) throws(HTTPFailure) -> [HTTPPart] {
        var parts: [HTTPPart] = []
        var input = bytes[...]
        while !input.isEmpty {
            switch state {
            case .head:
                buffer += input
                input = []
                guard let end = buffer.firstRange(of: [13, 10, 13, 10])?.lowerBound else {
                    guard buffer.count <= Self.maxHeadBytes else { throw HTTPFailure(stage: .response, reason: "the response head is over 64 KiB") }
                    continue
                }
                let head = try Self.parseHead(Array(buffer[..<end]))
                input = buffer[(end + 4)...]
                buffer = []
                parts.append(.head(head))
                if head.headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                    state = .chunkSize
                } else if let length = head.headers["content-length"] {
                    guard let n = Int(length), n >= 0 else { throw HTTPFailure(stage: .response, reason: "Content-Length is not a number") }
                    state = n == 0 ? .done : .body(remaining: n)
                } else if head.status == 204 || head.status == 304 {
                    state = .done
                } else {
                    state = .body(remaining: nil)
                }
            case .body(let remaining):
                if let remaining {
                    let take = min(remaining, input.count)
                    parts.append(.body(Array(input.prefix(take))))
                    input = input.dropFirst(take)
                    state = remaining - take == 0 ? .done : .body(remaining: remaining - take)
                } else {
                    parts.append(.body(Array(input)))
                    input = []
                }
            case .chunkSize, .chunkDataEnd, .trailer:
                guard let line = try takeLine(&input) else { continue }
                switch state {
                case .chunkSize:
                    let hex = line.split(separator: UInt8(ascii: ";"), maxSplits: 1).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
                    guard let size = Int(hex.trimmingWhitespace(), radix: 16), size >= 0 else {
                        throw HTTPFailure(stage: .response, reason: "a bad chunk size")
                    }
                    state = size == 0 ? .trailer : .chunkData(remaining: size)
                case .chunkDataEnd:
                    guard line.isEmpty else { throw HTTPFailure(stage: .response, reason: "a chunk does not end with CRLF") }
                    state = .chunkSize
                default:
                    if line.isEmpty { state = .done }
                }
            case .chunkData(let remaining):
                let take = min(remaining, input.count)
                parts.append(.body(Array(input.prefix(take))))
                input = input.dropFirst(take)
                state = remaining - take == 0 ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            case .done:
                input = []
            }
        }
        return parts
    }

    private mutating func takeLine(_ input: inout ArraySlice<UInt8>) throws(HTTPFailure) -> [UInt8]? {
        while let byte = input.first {
            input = input.dropFirst()
            if byte == 10 {
                defer { lineBuffer = [] }
                return lineBuffer.last == 13 ? Array(lineBuffer.dropLast()) : lineBuffer
            }
            lineBuffer.append(byte)
            guard lineBuffer.count <= 4096 else { throw HTTPFailure(stage: .response, reason: "a chunk line is too long") }
        }
        return nil
    }

    public static func parseHead(_ bytes: [UInt8]) throws(HTTPFailure) -> HTTPHead {
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first?.split(separator: " ", maxSplits: 2) ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]), (100...599).contains(status) else {
            throw HTTPFailure(stage: .response, reason: "not an HTTP/1.x status line")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...]).trimmingWhitespace()
        }
        return HTTPHead(status: status, headers: headers)
    }
}

/// The response decoder for the fuzzers: feeds bytes, keeps going until the first failure.
public struct HTTPResponseFuzzing {
    var decoder = HTTPResponseDecoder()
    var failed = false
    public init() {}
    public mutating func feed(_ bytes: [UInt8]) {
        guard !failed else { return }
        do { _ = try decoder.feed(bytes) } catch { failed = true }
    }
}
