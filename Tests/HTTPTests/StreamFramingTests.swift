// SPDX-License-Identifier: Apache-2.0
@testable import AppAPI
import BusCore
@testable import HTTP
import Testing

/// A stream's chunks and server-sent events are framed straight into a connection's buffer; the
/// bytes are what the plain construction (an array per piece) made.
@Suite struct StreamFramingTests {
    /// The chunk as RFC 9112 §7.1 spells it: the size in hex, CR LF, the bytes, CR LF.
    static func reference(_ bytes: [UInt8]) -> [UInt8] { Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10] }

    @Test func aChunkHeadSaysItsSizeInHexAtEveryWidth() {
        for size in [0, 1, 9, 10, 15, 16, 17, 255, 256, 4095, 4096, 65535, 65536, 1 << 20, (1 << 20) + 1] {
            let bytes = [UInt8](repeating: 0x61, count: size)
            #expect(HTTPResponder.chunk(bytes) == Self.reference(bytes), "a chunk of \(size) bytes")
        }
    }

    @Test func anEventIsItsIDItsKindAndItsJSONOnOneDataLine() {
        let encoded = Array(#"{"seq":42,"topic":"todos.created"}"#.utf8)
        for sequence: Int64? in [nil, 0, 42, -1, Int64.max, Int64.min] {
            let parameters: JSONValue = sequence.map { ["seq": .int($0), "topic": "todos.created"] } ?? ["topic": "todos.created"]
            let expected = Array((sequence.map { "id: \($0)\n" } ?? "").utf8) + Array("event: reply\ndata: ".utf8) + encoded + Array("\n\n".utf8)
            let id = HTTPAPI.eventID(parameters)
            #expect(HTTPAPI.event(parameters: parameters, encoded: encoded) == expected)
            #expect(HTTPAPI.eventByteCount(id: id, encoded: encoded) == expected.count)
            // Framed as the fan-out frames it: the event written into a buffer holding earlier bytes.
            var out = Array("earlier".utf8)
            HTTPResponder.appendChunk(count: HTTPAPI.eventByteCount(id: id, encoded: encoded), to: &out) { HTTPAPI.writeEvent(id: id, encoded: encoded, into: &$0) }
            #expect(out == Array("earlier".utf8) + Self.reference(expected))
        }
    }
}
