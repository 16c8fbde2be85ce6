// SPDX-License-Identifier: Apache-2.0
/// Reads a `Decodable` type's shape as a varlink type by decoding it from a recorder: each
/// field the type's `init(from:)` asks for is noted with its type. Works for the plain structs
/// events are made of (strings, numbers, bools, optionals, arrays, nested structs, `JSONValue`).
enum PayloadReflector {
    struct Unsupported: Error, CustomStringConvertible {
        let description: String
    }

    /// The varlink type of `T`, and a placeholder value of it to hand back to a parent decoder.
    static func reflect<T: Decodable>(_: T.Type) throws -> (VarlinkType, T) {
        if let primitive = primitive(T.self) { return primitive }
        if let enumeration = enumeration(T.self) { return enumeration }
        if T.self == JSONValue.self, let value = JSONValue.object([:]) as? T { return (.object, value) }
        let recorder = Recorder()
        let value = try T(from: recorder)
        switch recorder.shape {
        case .fields(let fields): return (.structure(fields), value)
        case .element(let element): return (.array(element ?? .object), value)
        case .single(let type): return (type, value)
        case nil: throw Unsupported(description: "\(T.self) decodes nothing")
        }
    }

    static func type<T: Decodable>(of _: T.Type) throws -> VarlinkType { try reflect(T.self).0 }

    /// A command's or reply's parameters: a struct, and one with no fields decodes nothing.
    static func parameters<T: Decodable>(of _: T.Type) throws -> VarlinkType {
        let recorder = Recorder()
        _ = try T(from: recorder)
        if recorder.shape == nil { return .structure([]) }
        return try reflect(T.self).0
    }

    /// The parameters of one case of an enum with associated values (its synthesized
    /// `Codable` form, `{"case": {"label": value}}`); throws when `T` has no such case.
    static func fields<T: Decodable>(of _: T.Type, case name: String) throws -> [VarlinkField] {
        let recorder = Recorder()
        recorder.pickedCase = name
        _ = try T(from: recorder)
        guard let fields = recorder.caseRecorder?.shape, case .fields(let recorded) = fields else {
            throw Unsupported(description: "\(T.self) has no case '\(name)'")
        }
        return recorded
    }

    /// A string enumeration (`enum Filter: String, CaseIterable`) as a varlink enum.
    private static func enumeration<T>(_: T.Type) -> (VarlinkType, T)? {
        guard let type = T.self as? any CaseIterable.Type else { return nil }
        func all<C: CaseIterable>(_ cases: C.Type) -> [Any] { Array(cases.allCases) }
        let cases = all(type)
        let names = cases.compactMap { ($0 as? any RawRepresentable)?.rawValue as? String }
        guard names.count == cases.count, let first = cases.first as? T else { return nil }
        return (.enumeration(names), first)
    }

    private static func primitive<T>(_: T.Type) -> (VarlinkType, T)? {
        func make(_ type: VarlinkType, _ value: Any) -> (VarlinkType, T)? { (value as? T).map { (type, $0) } }
        switch T.self {
        case is String.Type: return make(.string, "")
        case is Bool.Type: return make(.bool, false)
        case is Int.Type: return make(.int, 0 as Int)
        case is Int64.Type: return make(.int, 0 as Int64)
        case is Int32.Type: return make(.int, 0 as Int32)
        case is UInt64.Type: return make(.int, 0 as UInt64)
        case is UInt32.Type: return make(.int, 0 as UInt32)
        case is Double.Type: return make(.float, 0.0 as Double)
        case is Float.Type: return make(.float, 0 as Float)
        default: return nil
        }
    }

    final class Recorder: Decoder {
        enum Shape {
            case fields([VarlinkField])
            case element(VarlinkType?)
            case single(VarlinkType)
        }
        var shape: Shape?
        /// Set to read one case of an enum: its key, and the recorder of its parameters.
        var pickedCase: String?
        var caseRecorder: Recorder?
        /// Fields `decodeNil` was asked about: the optional ones.
        var askedForNil = Set<String>()
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            shape = .fields([])
            return KeyedDecodingContainer(Keyed<Key>(recorder: self))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            shape = .element(nil)
            return Unkeyed(recorder: self)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(recorder: self) }

        func add(_ name: String, _ type: VarlinkType) {
            guard case .fields(var fields) = shape else { return }
            if let index = fields.firstIndex(where: { $0.name == name }) {
                fields[index] = VarlinkField(name: name, type: type)
            } else {
                fields.append(VarlinkField(name: name, type: type))
            }
            shape = .fields(fields)
        }
    }

    /// A keyed container: `decodeNil` is asked first only for optional fields.
    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { recorder.pickedCase.flatMap { Key(stringValue: $0) }.map { [$0] } ?? [] }

        init(recorder: Recorder) { self.recorder = recorder }

        func contains(_ key: Key) -> Bool { true }

        func decodeNil(forKey key: Key) throws -> Bool {
            recorder.askedForNil.insert(key.stringValue)
            return false
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decode(type, key) }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type as Bool.Type, key) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type as String.Type, key) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type as Double.Type, key) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type as Float.Type, key) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type as Int.Type, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { throw Unsupported(description: "Int8 in events") }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { throw Unsupported(description: "Int16 in events") }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type as Int32.Type, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type as Int64.Type, key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { throw Unsupported(description: "UInt in events") }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { throw Unsupported(description: "UInt8 in events") }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { throw Unsupported(description: "UInt16 in events") }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type as UInt32.Type, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type as UInt64.Type, key) }

        /// Records the field (optional when `decodeNil` was asked first) and hands back a placeholder.
        private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
            let (varlink, value) = try PayloadReflector.reflect(T.self)
            recorder.add(key.stringValue, recorder.askedForNil.contains(key.stringValue) ? .optional(varlink) : varlink)
            return value
        }

        /// Only an enum's case (see `fields(of:case:)`) asks for one: its parameters.
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            guard recorder.pickedCase == key.stringValue else { throw Unsupported(description: "hand-written nested containers in events") }
            let parameters = Recorder()
            parameters.shape = .fields([])
            recorder.caseRecorder = parameters
            return KeyedDecodingContainer(Keyed<NestedKey>(recorder: parameters))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw Unsupported(description: "hand-written nested containers in events")
        }
        func superDecoder() throws -> any Decoder { recorder }
        func superDecoder(forKey key: Key) throws -> any Decoder { recorder }
    }

    /// An unkeyed container that holds one element, so the element type is seen once.
    struct Unkeyed: UnkeyedDecodingContainer {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        var count: Int? { 1 }
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex >= 1 }

        init(recorder: Recorder) { self.recorder = recorder }

        mutating func decodeNil() throws -> Bool { false }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (varlink, value) = try PayloadReflector.reflect(T.self)
            recorder.shape = .element(varlink)
            currentIndex += 1
            return value
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            throw Unsupported(description: "hand-written nested containers in events")
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw Unsupported(description: "nested arrays in events (varlink has no [][]T)")
        }
        mutating func superDecoder() throws -> any Decoder { recorder }
    }

    /// A single value: a type that decodes itself from one primitive.
    struct Single: SingleValueDecodingContainer {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (varlink, value) = try PayloadReflector.reflect(T.self)
            recorder.shape = .single(varlink)
            return value
        }
    }
}
