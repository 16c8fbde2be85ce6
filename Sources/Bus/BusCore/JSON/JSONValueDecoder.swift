// SPDX-License-Identifier: Apache-2.0
/// Decodes `Decodable` values straight from a `JSONValue` (no bytes in between).
///
/// Numbers convert the way JSON means them: an integer field accepts a float only when it is
/// whole; a float field accepts integers. Errors are the standard `DecodingError`s with the
/// coding path, so the wire can name the field at fault.
struct JSONValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: JSONValue, codingPath: [any CodingKey] = []) {
        self.value = value
        self.codingPath = codingPath
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        if T.self == JSONValue.self, let value = value as? T { return value }
        return try T(from: JSONValueDecoder(value: value))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: JSONValue].self, value, codingPath) }
        return KeyedDecodingContainer(Keyed<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([JSONValue].self, value, codingPath) }
        return Unkeyed(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(value: value, codingPath: codingPath) }

    struct IndexKey: CodingKey {
        var stringValue: String { String(intValue ?? 0) }
        var intValue: Int?
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { intValue = Int(stringValue) }
        init?(intValue: Int) { self.intValue = intValue }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [String: JSONValue]
        let codingPath: [any CodingKey]
        var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

        func value(_ key: Key) throws -> JSONValue {
            guard let value = members[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool { (members[key.stringValue] ?? .null) == .null }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let value = try value(key)
            return try Single(value: value, codingPath: codingPath + [key]).decode(type)
        }

        // The common field types, read straight from the value: no coding path is built (and
        // no nested decoder) unless the value is wrong, when the decode is repeated with the path
        // so the error names the field.
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try primitive(key) { try $0.decode(type) } }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try primitive(key) { try $0.decode(type) } }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try primitive(key) { try $0.decode(type) } }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try primitive(key) { try $0.decode(type) } }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try primitive(key) { try $0.decode(type) } }

        private func primitive<T>(_ key: Key, _ decode: (Single) throws -> T) throws -> T {
            let value = try value(key)
            do {
                return try decode(Single(value: value, codingPath: []))
            } catch {
                return try decode(Single(value: value, codingPath: codingPath + [key]))
            }
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            guard let value = members[key.stringValue], value != .null else { return nil }
            return try Single(value: value, codingPath: codingPath + [key]).decode(type)
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try JSONValueDecoder(value: value(key), codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try JSONValueDecoder(value: value(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { JSONValueDecoder(value: .object(members), codingPath: codingPath) }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            JSONValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
        }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let elements: [JSONValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        mutating func next() throws -> (JSONValue, [any CodingKey]) {
            let path = codingPath + [IndexKey(currentIndex)]
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: path, debugDescription: "array ended"))
            }
            defer { currentIndex += 1 }
            return (elements[currentIndex], path)
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, elements[currentIndex] == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (value, path) = try next()
            return try Single(value: value, codingPath: path).decode(type)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let (value, path) = try next()
            return try JSONValueDecoder(value: value, codingPath: path).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let (value, path) = try next()
            return try JSONValueDecoder(value: value, codingPath: path).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder {
            let (value, path) = try next()
            return JSONValueDecoder(value: value, codingPath: path)
        }
    }

    struct Single: SingleValueDecodingContainer {
        let value: JSONValue
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool { value == .null }

        func decode(_ type: Bool.Type) throws -> Bool {
            guard case .bool(let b) = value else { throw mismatch(type, value, codingPath) }
            return b
        }

        func decode(_ type: String.Type) throws -> String {
            guard case .string(let s) = value else { throw mismatch(type, value, codingPath) }
            return s
        }

        func decode(_ type: Double.Type) throws -> Double {
            switch value {
            case .double(let d): return d
            case .int(let i): return Double(i)
            default: throw mismatch(type, value, codingPath)
            }
        }

        func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

        func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            switch value {
            case .int(let i):
                guard let exact = I(exactly: i) else { throw outOfRange(type) }
                return exact
            case .double(let d):
                guard d.rounded() == d, let exact = I(exactly: d) else { throw outOfRange(type) }
                return exact
            default: throw mismatch(type, value, codingPath)
            }
        }

        func outOfRange<I>(_ type: I.Type) -> DecodingError {
            .dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(value.jsonText) does not fit \(type)"))
        }

        func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if T.self == JSONValue.self, let value = value as? T { return value }
            return try T(from: JSONValueDecoder(value: value, codingPath: codingPath))
        }
    }
}

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    if value == .null {
        return .valueNotFound(type, .init(codingPath: path, debugDescription: "expected \(type), got null"))
    }
    return .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), got \(value.kindName)"))
}
