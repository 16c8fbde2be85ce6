import Bus
import Testing

@Suite struct JSONTests {
    @Test func parsesEveryKindOfValue() throws {
        let value = try JSONParser.parse(Array(#" {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d\n\u00e9\ud83d\ude00"}} "#.utf8))
        #expect(value == [
            "a": [1, -2, 3.5, 1000.0, true, false, nil],
            "b": ["c": "d\né😀"],
        ])
    }

    @Test func writesCompactSortedJSONThatParsesBack() throws {
        let value: JSONValue = ["z": 1, "a": ["x\"\\\u{01}", 2.5, nil, false], "m": [:]]
        let text = value.jsonText
        #expect(text == #"{"a":["x\"\\\u0001",2.5,null,false],"m":{},"z":1}"#)
        #expect(try JSONParser.parse(Array(text.utf8)) == value)
    }

    @Test func bigIntegersBecomeDoubles() throws {
        #expect(try JSONParser.parse(Array("9223372036854775807".utf8)) == .int(Int64.max))
        #expect(try JSONParser.parse(Array("92233720368547758070".utf8)) == .double(92233720368547758070))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc", "{\"a\" 1}", "[1 2]", "1 2",
        "\"\\x\"", "\"\\ud800\"", "\"a\u{01}b\"", "nul", "{1:2}", "1e999",
    ])
    func rejectsMalformedDocuments(text: String) {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse([0x22, 0x5C, 0x6E, 0xC3, 0x22]) }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(deep.utf8)) }
        let ok = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect((try? JSONParser.parse(Array(ok.utf8))) != nil)
    }

    @Test func codableBridgeRoundTrips() throws {
        struct Sample: Codable, Equatable {
            var name: String
            var count: Int
            var tags: [String]
            var nested: JSONValue
        }
        let sample = Sample(name: "n", count: 3, tags: ["a"], nested: ["k": [1, "two"]])
        let json = try JSONValue(encoding: sample)
        #expect(json["count"] == 3)
        #expect(try json.decode(as: Sample.self) == sample)
    }
}
