// SPDX-License-Identifier: Apache-2.0
@testable import BusCore
import Contracts
import Testing

/// `JSONBytesEncoder` writes exactly the bytes of `JSONWriter.bytes(JSONValue(encoding:))`: over
/// every built-in method's reply type, filled in from its IDL (optionals present and absent,
/// strings that need escaping, keys out of order), and over the corners of `Encodable`.
@Suite struct JSONBytesEncoderTests {
    static func reference(_ value: some Encodable) throws -> [UInt8] { JSONWriter.bytes(try JSONValue(encoding: value)) }

    /// A value of `type` as the IDL describes it; `present` decides the optionals.
    static func sample(_ type: VarlinkType, in interface: VarlinkInterface, present: Bool, depth: Int = 0) -> JSONValue {
        switch type {
        case .bool: return .bool(present)
        case .int: return .int(present ? 9_007_199_254_740_993 : -7)
        case .float: return .double(present ? 0.1 : -2.5e-8)
        case .string: return .string(present ? "quote \" back \\ new\nline tab\t ctl \u{1} é ✓ </script>" : "")
        case .object: return ["zeta": 1, "alpha": ["b": .null, "a": [1.5, "x", true]], "mid": .string("m")]
        case .optional(let inner): return present && depth < 6 ? sample(inner, in: interface, present: present, depth: depth + 1) : .null
        case .array(let inner):
            return .array(depth < 6 ? [sample(inner, in: interface, present: present, depth: depth + 1), sample(inner, in: interface, present: !present, depth: depth + 1)] : [])
        case .map(let inner):
            return depth < 6
                ? .object(["b-key": sample(inner, in: interface, present: present, depth: depth + 1), "a-key": sample(inner, in: interface, present: !present, depth: depth + 1)])
                : [:]
        case .named(let name):
            guard let definition = interface.type(name) else { return .null }
            return sample(definition.type, in: interface, present: present, depth: depth + 1)
        case .structure(let fields):
            return .object(Dictionary(uniqueKeysWithValues: fields.map { ($0.name, sample($0.type, in: interface, present: present, depth: depth + 1)) }))
        case .enumeration(let cases): return .string(present ? cases.last ?? "" : cases.first ?? "")
        }
    }

    static let interfaces: [(String, [any Command.Type], [any StreamingCommand.Type])] = [
        (AuthInterface.idl, AuthInterface.commands, AuthInterface.streams), (TodosInterface.idl, TodosInterface.commands, TodosInterface.streams),
        (ChatInterface.idl, ChatInterface.commands, ChatInterface.streams), (PaymentsInterface.idl, PaymentsInterface.commands, PaymentsInterface.streams),
        (RatingInterface.idl, RatingInterface.commands, RatingInterface.streams), (SettingsInterface.idl, SettingsInterface.commands, SettingsInterface.streams),
        (DaemonInterface.idl, DaemonInterface.commands, DaemonInterface.streams), (BackupInterface.idl, BackupInterface.commands, BackupInterface.streams),
        (ConsoleInterface.idl, ConsoleInterface.commands, ConsoleInterface.streams), (ExportInterface.idl, ExportInterface.commands, ExportInterface.streams),
    ]

    /// Decodes the IDL's sample as the reply type and encodes it both ways; the method names
    /// that differ (or whose sample the type did not take, which would make the check empty).
    /// The reply's encoder as a handler makes it (`JSONBytesEncoder.encoder(for:)`) is checked too.
    static func check<Reply: Codable & Sendable>(_ method: String, _ type: Reply.Type, in interface: VarlinkInterface) -> (checked: Int, problems: [String]) {
        guard let declared = interface.method(method.methodNameParts.map { String($0.member) } ?? method) else { return (0, ["\(method): not in the IDL"]) }
        var checked = 0
        var problems: [String] = []
        for present in [true, false] {
            let json = sample(.structure(declared.output), in: interface, present: present)
            guard let reply = try? JSONValueDecoder.decode(Reply.self, from: json) else { continue }
            checked += 1
            do {
                let bytes = try JSONBytesEncoder.encode(reply)
                let expected = try reference(reply)
                if bytes != expected { problems.append("\(method): \(String(decoding: bytes, as: UTF8.self)) != \(String(decoding: expected, as: UTF8.self))") }
                let chosen = try JSONBytesEncoder.encoder(for: Reply.self)(reply)
                if chosen != expected { problems.append("\(method), its chosen encoder: \(String(decoding: chosen, as: UTF8.self))") }
            } catch {
                problems.append("\(method): \(error)")
            }
        }
        return (checked, problems)
    }

    @Test func everyBuiltInReplyTypeEncodesToTheSameBytesBothWays() throws {
        var checked = 0
        var methods = 0
        var problems: [String] = []
        for (idl, commands, streams) in Self.interfaces {
            let interface = try VarlinkInterface(parsing: idl)
            func one<C: Command>(_ command: C.Type) -> (Int, [String]) { Self.check(C.method, C.Reply.self, in: interface) }
            func one<C: StreamingCommand>(_ command: C.Type) -> (Int, [String]) { Self.check(C.method, C.Reply.self, in: interface) }
            for command in commands {
                let (n, found) = one(command)
                methods += 1
                checked += n
                problems += found
            }
            for stream in streams {
                let (n, found) = one(stream)
                methods += 1
                checked += n
                problems += found
            }
        }
        #expect(problems == [], "\(problems.joined(separator: "\n"))")
        // Most replies took both samples: the comparison covered them.
        #expect(methods > 60 && checked > methods, "\(checked) samples over \(methods) methods")
    }

    struct Corners: Encodable {
        var tiny: Int8 = -8
        var big: UInt64 = .max
        var float: Float = 0.5
        var nested: [[String: [Int]]] = [["b": [1, 2], "a": []]]
        var none: String? = nil
        var json: JSONValue = ["k": [1, "two", .null], "a": 1.25]
        var empty = Empty()

        enum Keys: String, CodingKey { case tiny, big, float, nested, none, json, empty, twice, sup, single }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(tiny, forKey: .tiny)
            try c.encode(big, forKey: .big)
            try c.encode(float, forKey: .float)
            try c.encode(nested, forKey: .nested)
            try c.encodeIfPresent(none, forKey: .none)
            try c.encodeNil(forKey: .none)
            try c.encode(json, forKey: .json)
            try c.encode(empty, forKey: .empty)
            // The last write of a key wins, a container written over by a plain value too.
            var inner = c.nestedContainer(keyedBy: Keys.self, forKey: .twice)
            try inner.encode(1, forKey: .tiny)
            try c.encode("second", forKey: .twice)
            try c.encode(3, forKey: .tiny)
            var unkeyed = c.nestedUnkeyedContainer(forKey: .sup)
            try unkeyed.encode(true)
            try unkeyed.encodeNil()
            var deeper = unkeyed.nestedContainer(keyedBy: Keys.self)
            try deeper.encode("x", forKey: .single)
            try unkeyed.encode(UInt8(7))
            let superEncoder = c.superEncoder(forKey: .single)
            var single = superEncoder.singleValueContainer()
            try single.encode(UInt32(40))
        }
    }

    struct NonFinite: Encodable {
        var value: Double
    }

    @Test func theCornersOfEncodableEncodeToTheSameBytes() throws {
        let corners = try JSONBytesEncoder.encode(Corners())
        #expect(corners == (try Self.reference(Corners())), "\(String(decoding: corners, as: UTF8.self))")
        #expect(try JSONBytesEncoder.encode("a\"b") == (try Self.reference("a\"b")))
        #expect(try JSONBytesEncoder.encode([3, 1, 2]) == (try Self.reference([3, 1, 2])))
        #expect(try JSONBytesEncoder.encode(["b": 1, "a": 2]) == (try Self.reference(["b": 1, "a": 2])))
        #expect(try JSONBytesEncoder.encode(Optional<Int>.none) == (try Self.reference(Optional<Int>.none)))
        // Optionals inside arrays are not plain values: they encode themselves, to the same JSON.
        let optionals: [String?] = ["a", nil, "é\n"]
        #expect(try JSONBytesEncoder.encode(optionals) == Array(#"["a",null,"é\n"]"#.utf8))
        #expect(try JSONBytesEncoder.encode(optionals) == (try Self.reference(optionals)))
        #expect(try JSONValue(encoding: [Int64(-1), nil] as [Int64?]) == .array([.int(-1), .null]))
        #expect(try JSONBytesEncoder.encode([true, false]) == Array("[true,false]".utf8))
        #expect(try JSONBytesEncoder.encode(Empty()) == Array("{}".utf8))
        #expect(try JSONBytesEncoder.encoder(for: Empty.self)(Empty()) == Array("{}".utf8))
        let json: JSONValue = ["b": [1, "x"], "a": nil]
        #expect(try JSONBytesEncoder.encoder(for: JSONValue.self)(json) == (try JSONBytesEncoder.encode(json)))
        #expect(try JSONBytesEncoder.encoder(for: [Int].self)([3, 1, 2]) == Array("[3,1,2]".utf8))
        #expect(throws: EncodingError.self) { try JSONBytesEncoder.encoder(for: NonFinite.self)(NonFinite(value: .nan)) }
        #expect(throws: EncodingError.self) { try JSONBytesEncoder.encode(NonFinite(value: .nan)) }
        #expect(throws: EncodingError.self) { try JSONBytesEncoder.encode([Double.infinity]) }
    }

    /// Keys present or not, in any order, written twice, not ASCII.
    struct Varied: Encodable {
        var present: [Int]
        enum Keys: String, CodingKey { case b, a, é, e, ab, z }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            for index in present { try c.encode(index, forKey: [Keys.b, .a, .é, .e, .ab, .z][index % 6]) }
        }
    }

    /// An object's layout is remembered per coding-key type (`JSONKeyLayouts`): every variant
    /// of one type — more than it keeps — and dictionaries (one key type, any keys) still
    /// encode to the tree's bytes, again and again.
    @Test func remembersLayoutsWithoutMixingThemUp() throws {
        var variants: [[Int]] = [[0, 1], [1, 0], [0, 0, 1], [2, 3], [3, 2], [4, 0], [0, 4], [5, 1, 2, 3, 4, 0], [1, 1, 1], [2, 2, 3, 3]]
        for n in 0..<40 { variants.append((0..<(n % 7)).map { ($0 * 5 + n) % 6 }) }
        for _ in 0..<3 {
            for present in variants {
                #expect(try JSONBytesEncoder.encode(Varied(present: present)) == (try Self.reference(Varied(present: present))), "\(present)")
            }
        }
        let maps: [[String: Int]] = [["b": 1, "a": 2], ["a": 2, "b": 1], ["é": 1, "e": 2, "f": 3], ["z": 0], ["ab": 1, "a": 2, "b": 3]]
        for _ in 0..<3 {
            for map in maps { #expect(try JSONBytesEncoder.encode(map) == (try Self.reference(map))) }
        }
    }
}
