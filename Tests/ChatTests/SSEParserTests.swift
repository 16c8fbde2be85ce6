// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import HTTP
@testable import Chat

@Suite struct SSEParserTests {
    let stream = ": keep-alive comment\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\ndata: line one\ndata: line two\n\nid: 7\rdata: é€😀\r\r"
    let expected = [
        SSEParser.Event(event: "message", data: "{\"a\":1}"), SSEParser.Event(event: nil, data: "line one\nline two"),
        SSEParser.Event(event: nil, data: "é€😀"),
    ]

    @Test func parsesWholeInput() throws {
        var parser = SSEParser()
        #expect(try parser.feed(Array(stream.utf8)) == expected)
        #expect(parser.finish().isEmpty)
    }

    @Test func anySplitOfTheBytesGivesTheSameEvents() throws {
        let bytes = Array(stream.utf8)
        // Byte by byte (splits CRLF pairs and UTF-8 characters).
        var parser = SSEParser()
        var events: [SSEParser.Event] = []
        for byte in bytes { events += try parser.feed([byte]) }
        #expect(events == expected)
        // Every two-way split.
        for cut in 0...bytes.count {
            var p = SSEParser()
            let got = try p.feed(bytes[0..<cut]) + p.feed(bytes[cut...]) + p.finish()
            #expect(got == expected, "split at \(cut)")
        }
    }

    @Test func bytesWithoutContiguousStorageGiveTheSameEvents() throws {
        // The parser reads contiguous bytes in place; any other sequence is copied first.
        let lazy = Array(stream.utf8).lazy.map { $0 }
        #expect(lazy.withContiguousStorageIfAvailable { _ in true } == nil)
        var parser = SSEParser()
        #expect(try parser.feed(lazy) == expected)
        var limited = SSEParser(maxLineBytes: 10)
        #expect(throws: SSEParser.LineTooLong.self) { _ = try limited.feed([UInt8](repeating: 65, count: 11).lazy.map { $0 }) }
    }

    @Test func aFinalEventWithoutItsBlankLineIsDelivered() throws {
        var parser = SSEParser()
        #expect(try parser.feed(Array("data: [DONE]".utf8)).isEmpty)
        #expect(parser.finish() == [SSEParser.Event(event: nil, data: "[DONE]")])
    }

    @Test func anEndlessLineIsRefused() {
        var parser = SSEParser(maxLineBytes: 100)
        #expect(throws: SSEParser.LineTooLong.self) { _ = try parser.feed([UInt8](repeating: 65, count: 101)) }
    }
}

@Suite struct HTTPDecoderTests {
    @Test func chunkedBodiesDecodeWhateverTheSplit() throws {
        let response = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n".utf8)
        for step in [1, 2, 3, 7, response.count] {
            var decoder = HTTPResponseDecoder()
            var body: [UInt8] = []
            var head: HTTPHead?
            var i = 0
            while i < response.count {
                for part in try decoder.feed(Array(response[i..<min(i + step, response.count)])) {
                    switch part {
                    case .head(let h): head = h
                    case .body(let b): body += b
                    }
                }
                i += step
            }
            #expect(head == HTTPHead(status: 200, headers: ["transfer-encoding": "chunked", "x-a": "b"]))
            #expect(String(decoding: body, as: UTF8.self) == "hello world")
            #expect(decoder.isComplete)
        }
    }

    @Test func badResponsesAreTypedFailures() {
        for bad in ["SMTP 220 hi\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"] {
            var decoder = HTTPResponseDecoder()
            #expect(throws: HTTPFailure.self) { _ = try decoder.feed(Array(bad.utf8)) }
        }
    }

    @Test func urlsSplitIntoTheirParts() throws {
        let a = try #require(HTTPRequest(url: "https://api.openai.com/v1", appending: "/chat/completions"))
        #expect(a.tls && a.host == "api.openai.com" && a.port == 443 && a.path == "/v1/chat/completions")
        let b = try #require(HTTPRequest(url: "http://[::1]:11434/v1/", appending: "/chat/completions"))
        #expect(!b.tls && b.host == "::1" && b.port == 11434 && b.path == "/v1/chat/completions")
        #expect(HTTPRequest(url: "ftp://x") == nil)
        #expect(HTTPRequest(url: "http://host:99999/") == nil)
    }
}
