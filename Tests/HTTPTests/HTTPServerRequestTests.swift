// SPDX-License-Identifier: Apache-2.0
import HTTP
import Testing

/// The request head parser and the header fields it fills.
@Suite struct HTTPServerRequestTests {
    static func parse(_ head: String) -> Result<HTTPServerRequest, HTTPRefusal> {
        HTTPServerRequest.parse(head: Array(head.utf8)[...], maxBodyBytes: 100)
    }

    static let notHTTP = HTTPRefusal(status: 400, error: "BadRequest", reason: "not an HTTP/1.x request line")

    @Test func fieldsAreFoundByTheirLowerCasedNameAndARepeatedOneKeepsItsLastValue() throws {
        let request = try Self.parse("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nX-Trace: one\r\nACCEPT: text/plain\r\nx-trace: two").get()
        #expect(request.headers["host"] == "x")
        #expect(request.headers["accept"] == "text/plain")
        #expect(request.headers["x-trace"] == "two", "the last of a repeated field")
        #expect(request.headers["Accept"] == nil, "names are looked up lower-cased")
        #expect(request.headers["origin"] == nil)
        #expect(request.headers.count == 4)
        #expect(request.headers.dictionary == ["host": "x", "content-length": "2", "x-trace": "two", "accept": "text/plain"])
        #expect(request.contentLength == 2)
    }

    @Test func fieldsAreSetReplacedAndRemovedByName() {
        var fields: HTTPHeaderFields = ["a": "1", "b": "2"]
        fields["a"] = "3"
        fields["c"] = "4"
        fields["b"] = nil
        fields["missing"] = nil
        #expect(fields.dictionary == ["a": "3", "c": "4"])
        #expect(fields == HTTPHeaderFields(["c": "4", "a": "3"]), "equal whatever the order")
        #expect(fields != ["a": "3"])
        // Names of the same length are told apart by their bytes.
        let same: HTTPHeaderFields = ["x-trace": "1", "x-tracf": "2", "accept": "3", "x-trace-long-name-over-fifteen": "4"]
        #expect(same["x-tracf"] == "2" && same["x-trace"] == "1" && same["x-tracg"] == nil && same["accept"] == "3")
        #expect(same["x-trace-long-name-over-fifteen"] == "4" && same["x-trace-long-name-over-fifteem"] == nil)
    }

    @Test(arguments: [
        "GET  / HTTP/1.1", " GET / HTTP/1.1", "GET / HTTP/1.1 ", "GET / ", "GET /", "GET", "", "GET / HTTP/1.1 extra", "GET / HTTP/2.0",
    ])
    func aRequestLineWithoutExactlyThreePartsOrAnother1xVersionIsRefused(line: String) {
        #expect(Self.parse(line + "\r\nHost: x") == .failure(Self.notHTTP), "\(line)")
    }

    @Test func theRequestLinesPartsAreReadWhereTheTwoSpacesAre() throws {
        let request = try Self.parse("DELETE /v1/x?y=1 HTTP/1.0\r\nContent-Length: 0").get()
        #expect(request.method == "DELETE" && request.target == "/v1/x?y=1" && request.path == "/v1/x" && request.query == ["y": "1"])
        #expect(!request.keepAlive, "HTTP/1.0 without keep-alive")
    }

    @Test func aBodyMethodWithoutALengthIsRefusedAndOthersAreNot() {
        let lengthRequired = HTTPRefusal(status: 411, error: "LengthRequired", reason: "send a Content-Length with the body")
        for method in ["POST", "PUT", "PATCH"] {
            #expect(Self.parse("\(method) / HTTP/1.1\r\nHost: x") == .failure(lengthRequired), "\(method)")
        }
        for method in ["GET", "DELETE", "HEAD", "POSTS"] {
            #expect((try? Self.parse("\(method) / HTTP/1.1\r\nHost: x").get())?.contentLength == 0, "\(method)")
        }
    }

    @Test func fieldsThatMayNotRepeatAreRefusedTwice() {
        for name in ["Content-Length: 1", "Authorization: Bearer a", "Transfer-Encoding: chunked"] {
            let result = Self.parse("POST / HTTP/1.1\r\n\(name)\r\n\(name)")
            guard case .failure(let refusal) = result else {
                Issue.record("\(name) twice was accepted")
                continue
            }
            #expect(refusal.status == 400 && refusal.reason.hasSuffix("appears twice"), "\(refusal)")
        }
    }
}
