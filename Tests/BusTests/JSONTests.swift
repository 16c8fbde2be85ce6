// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing

@Suite struct JSONTests {
    @Test func parsesEveryKindOfValue() throws {
        let value = try JSONParser.parse(Array(#" {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d\n\u00e9\ud83d\ude00"}} "#.utf8))
        #expect(
            value == [
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

    @Test func integersAreWrittenAsTheirDecimalDigits() throws {
        for value: Int64 in [0, 1, -1, 9, 10, -10, 1234567890, .max, .min, .max - 1, .min + 1] {
            #expect(JSONValue.int(value).jsonText == String(value))
            #expect(try JSONParser.parse(Array(JSONValue.int(value).jsonText.utf8)) == .int(value))
        }
    }

    @Test func aVarlinkReplyIsWrittenAsItsSortedObject() throws {
        let reply = VarlinkReply(parameters: ["seq": 42, "topic": "t"], continues: true, error: "io.appd.X.Failed")
        var out: [UInt8] = []
        reply.write(into: &out)
        #expect(out.last == 0)
        let object: JSONValue = ["continues": true, "error": "io.appd.X.Failed", "parameters": ["seq": 42, "topic": "t"]]
        #expect(Array(out.dropLast()) == JSONWriter.bytes(object))
        out.removeAll()
        VarlinkReply(parameters: .null).write(into: &out)
        #expect(String(decoding: out.dropLast(), as: UTF8.self) == #"{"parameters":{}}"#)
    }

    @Test func bigIntegersBecomeDoubles() throws {
        #expect(try JSONParser.parse(Array("9223372036854775807".utf8)) == .int(Int64.max))
        #expect(try JSONParser.parse(Array("92233720368547758070".utf8)) == .double(9.223372036854775807e19))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc", "{\"a\" 1}", "[1 2]", "1 2",
        "\"\\x\"", "\"\\ud800\"", "\"a\u{01}b\"", "nul", "{1:2}", "1e999",
    ])
    func rejectsMalformedDocuments(text: String) {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    /// Hardening finding 12: the last of two equal member names won.
    @Test func rejectsAMemberNameGivenTwice() {
        do {
            _ = try JSONParser.parse(Array(#"{"method":"io.appd.Daemon.Ping","method":"io.appd.Daemon.Shutdown"}"#.utf8))
            Issue.record("accepted a member name twice")
        } catch {
            #expect(error.offset == 32 && error.reason == "the member name 'method' appears twice in one object")
        }
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(#"{"a":{"b":1,"b":1}}"#.utf8)) }
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(#"{"a":1,"a":2}"#.utf8)) }
        #expect((try? JSONParser.parse(Array(#"[{"a":1},{"a":2}]"#.utf8))) != nil)
    }

    /// An envelope read member by member is held to what `parse` holds a document to, and
    /// gives the same members.
    @Test func membersAreReadAsParseReadsThem() throws {
        func members(_ text: String) throws(JSONParser.Error) -> [String: JSONValue]? {
            var got: [String: JSONValue] = [:]
            let isObject = try JSONParser.parseMembers(Array(text.utf8)[...]) { name, value in got[name] = value }
            return isObject ? got : nil
        }
        let envelope = #" {"method":"a.B","parameters":{"x":[1,{"y":null}]},"more":true} "#
        #expect(try members(envelope).map(JSONValue.object) == JSONParser.parse(Array(envelope.utf8)))
        #expect(try members("{}") == [:])
        // Valid JSON that is not an object is said so; invalid JSON throws as parse does.
        #expect(try members("[1]") == nil && members(#""text""#) == nil)
        for bad in [#"{"a":1"#, #"{"a":1} x"#, #"{"a" 1}"#, "[1", #"{"a":1,}"#] {
            #expect(throws: JSONParser.Error.self, "\(bad)") { try members(bad) }
        }
        // A name twice, among few members and among many (past the list, in the set).
        do {
            _ = try members(#"{"method":"io.appd.Daemon.Ping","method":"io.appd.Daemon.Shutdown"}"#)
            Issue.record("accepted a member name twice")
        } catch {
            #expect(error.offset == 32 && error.reason == "the member name 'method' appears twice in one object")
        }
        let many = (0..<20).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(try members("{\(many)}")?.count == 20)
        #expect(throws: JSONParser.Error.self) { try members("{\(many),\"k3\":0}") }
        #expect(throws: JSONParser.Error.self) { try members("{\(many),\"k19\":0}") }
        // The nesting limit counts the envelope as parse does.
        let deep = String(repeating: "[", count: 10) + String(repeating: "]", count: 10)
        #expect(throws: JSONParser.Error.self) { try JSONParser.parseMembers(Array("{\"a\":\(deep)}".utf8)[...], maxDepth: 10) { _, _ in } }
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array("{\"a\":\(deep)}".utf8), maxDepth: 10) }
        #expect(try JSONParser.parseMembers(Array("{\"a\":\(deep)}".utf8)[...], maxDepth: 11) { _, _ in })
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

@Suite struct JSONValueCodingTests {
    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case square(side: Int)
        case none
    }

    struct Everything: Codable, Equatable {
        var text: String
        var flag: Bool
        var small: Int8
        var big: UInt64
        var ratio: Float
        var optional: String?
        var list: [Int]
        var nested: [String: [Shape]]
        var raw: JSONValue
        var shape: Shape
    }

    @Test func roundTripsWithoutBytes() throws {
        let value = Everything(
            text: "t", flag: true, small: -3, big: 42, ratio: 0.5, optional: nil, list: [1, 2],
            nested: ["a": [.circle(radius: 1.5), .none]], raw: ["k": [1, nil]], shape: .square(side: 2))
        let json = try JSONValue(encoding: value)
        #expect(json["optional"] == nil)  // nil optionals are omitted, as Foundation does
        #expect(json["raw"] == ["k": [1, nil]])
        #expect(json["small"] == -3)
        #expect(try json.decode(as: Everything.self) == value)
    }

    @Test func numbersConvertTheWayJSONMeansThem() throws {
        #expect(try JSONValue.double(3).decode(as: Int.self) == 3)
        #expect(try JSONValue.int(3).decode(as: Double.self) == 3)
        #expect(throws: DecodingError.self) { try JSONValue.double(3.5).decode(as: Int.self) }
        #expect(throws: DecodingError.self) { try JSONValue.int(300).decode(as: UInt8.self) }
        #expect(throws: EncodingError.self) { try JSONValue(encoding: [Double.nan]) }
        #expect(try JSONValue(encoding: UInt64.max) == .double(Double(UInt64.max)))
    }

    /// Plain members go straight into their object and containers get nodes of their own:
    /// order, overwrites and mixed arrays come out as written.
    @Test func plainAndNestedMembersMixAndTheLastWriteOfAKeyWins() throws {
        struct Mixed: Encodable {
            enum Key: String, CodingKey { case a, b, list }
            func encode(to encoder: any Encoder) throws {
                var object = encoder.container(keyedBy: Key.self)
                try object.encode(1, forKey: .a)
                var nested = object.nestedContainer(keyedBy: Key.self, forKey: .a)  // replaces a: 1
                try nested.encode("inner", forKey: .b)
                var gone = object.nestedUnkeyedContainer(forKey: .b)
                try gone.encode(1)
                try object.encode(true, forKey: .b)  // replaces the array
                var list = object.nestedUnkeyedContainer(forKey: .list)
                try list.encode(1)
                var element = list.nestedContainer(keyedBy: Key.self)
                try element.encode(2, forKey: .a)
                try list.encode("three")
                var inner = list.nestedUnkeyedContainer()
                try inner.encode(4)
                try list.encode(["five": 5])
                try nested.encode(6, forKey: .a)  // a container is filled after its parent moved on
            }
        }
        #expect(try JSONValue(encoding: Mixed()) == ["a": ["b": "inner", "a": 6], "b": true, "list": [1, ["a": 2], "three", [4], ["five": 5]]])
    }

    @Test func encodingErrorsCarryThePath() throws {
        struct Point: Encodable { var x: Double }
        struct Shape: Encodable { var name: String; var points: [Point] }
        do {
            _ = try JSONValue(encoding: Shape(name: "s", points: [Point(x: 1), Point(x: .infinity)]))
            Issue.record("an infinite number was encoded")
        } catch EncodingError.invalidValue(_, let context) {
            #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["points", "1", "x"])
        }
        do {
            _ = try JSONValue(encoding: ["a": [1.0, -.infinity]])
            Issue.record("an infinite number was encoded")
        } catch EncodingError.invalidValue(_, let context) {
            #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["a", "1"])
        }
    }

    @Test func decodingErrorsCarryThePath() throws {
        let json: JSONValue = ["text": "t", "flag": true, "small": 1, "big": 1, "ratio": 1, "list": [1, "x"], "nested": [:], "raw": nil, "shape": ["none": [:]]]
        do {
            _ = try json.decode(as: Everything.self)
            Issue.record("expected a type mismatch")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["list", "1"])
        }
        // A field of a common type (read without building its path) still names itself.
        struct Inner: Decodable { var count: Int; var name: String; var on: Bool; var ratio: Double; var big: Int64 }
        struct Outer: Decodable { var inner: Inner }
        let good: JSONValue = ["count": 1, "name": "n", "on": true, "ratio": 0.5, "big": 2]
        for (field, bad) in [("count", JSONValue.string("x")), ("name", 3), ("on", "yes"), ("ratio", "1"), ("big", 1.5), ("count", nil)] {
            var fields = good.objectValue ?? [:]
            fields[field] = bad
            do {
                _ = try JSONValue.object(["inner": .object(fields)]).decode(as: Outer.self)
                Issue.record("accepted \(bad) for \(field)")
            } catch let error as DecodingError {
                let context: DecodingError.Context? =
                    switch error {
                    case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c): c
                    default: nil
                    }
                #expect(context?.codingPath.map(\.stringValue) == ["inner", field], "\(field): \(error)")
            }
        }
        do {
            _ = try JSONValue.object(["inner": ["count": 1]]).decode(as: Outer.self)
            Issue.record("accepted a missing field")
        } catch DecodingError.keyNotFound(let key, let context) {
            #expect(key.stringValue == "name" && context.codingPath.map(\.stringValue) == ["inner"])
        }
    }
}
