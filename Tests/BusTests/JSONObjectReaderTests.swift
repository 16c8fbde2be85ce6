// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import BusCore
@testable import Serving
import Testing

/// A command whose two decodings say which one ran.
private struct Probe: Command, JSONObjectReadable {
    static let method = "io.appd.Test.Probe"
    typealias Reply = ProbeReply
    var text: String
    var count: Int?
    var via = "Decodable"

    enum CodingKeys: String, CodingKey { case text, count }

    init(text: String, count: Int?) {
        self.text = text
        self.count = count
    }

    init(reading object: JSONObjectReader) throws {
        self.init(text: try object.required("text"), count: try object.optional("count"))
        via = "reader"
    }
}

private struct ProbeReply: Codable, Sendable, Equatable {
    var text: String
    var count: Int?
    var via: String
}

/// A handler's parameters are read by the command's own reader when it has one
/// (`JSONObjectReadable`), with the same errors as `Decodable`'s, and through `Decodable` otherwise.
@Suite struct JSONObjectReaderTests {
    @Test func theDecoderOfAReadableTypeReadsItAndOfAnyOtherDecodesIt() throws {
        #expect(try JSONValue.decoder(for: Probe.self)(["text": "a", "count": 2]).via == "reader")
        #expect(try (["text": "a", "count": 2] as JSONValue).decode(as: Probe.self).via == "Decodable")
        #expect(try JSONValue.decoder(for: EchoReply.self)(["text": "a"]) == EchoReply(text: "a"))
        // Not an object: the error `Decodable` gives.
        #expect(throws: DecodingError.self) { try JSONValue.decoder(for: Probe.self)(["a"]) }
    }

    @Test func theReaderThrowsDecodablesErrorsWithThePath() throws {
        func failure(_ value: JSONValue) -> String {
            do {
                _ = try JSONValue.decoder(for: Probe.self)(value)
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        func reference(_ value: JSONValue) -> String {
            do {
                _ = try value.decode(as: Probe.self)
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        let wrong: [JSONValue] = [[:], ["text": 5], ["text": .null], ["text": "a", "count": "2"], ["text": "a", "count": 2.5], ["count": 1], .string("x")]
        for value in wrong {
            #expect(failure(value) != "decoded", "\(value.jsonText)")
            #expect(failure(value) == reference(value), "\(value.jsonText)")
        }
        #expect(failure(["text": "a", "count": 2.5]).contains("count"), "the path names the member")
    }

    @Test func everyKindOfHandlerReadsItsParametersWithTheReader() async throws {
        let bus = EventBus()
        try bus.register(Probe.self) { probe, _ in ProbeReply(text: probe.text, count: probe.count, via: probe.via) }
        #expect(try await bus.call(method: Probe.method, parameters: ["text": "a", "count": 3]) == ["text": "a", "count": 3, "via": "reader"])

        let inline = EventBus()
        try inline.answer(Probe.self) { probe, _ in ProbeReply(text: probe.text, count: nil, via: probe.via) }
        #expect(try await inline.call(method: Probe.method, parameters: ["text": "b"]) == ["text": "b", "via": "reader"])

        for bus in [bus, inline] {
            do {
                _ = try await bus.call(method: Probe.method, parameters: ["text": "a", "count": "many"])
                Issue.record("expected InvalidParameters")
            } catch let error as InvalidParameters {
                #expect(error.parameter == "count")
            }
            // No parameters are an empty object: `text` is missing.
            do {
                _ = try await bus.call(method: Probe.method, parameters: .null)
                Issue.record("expected InvalidParameters")
            } catch let error as InvalidParameters {
                #expect(error.parameter == "text")
                #expect(error.reason == "missing")
            }
        }
    }
}
