// SPDX-License-Identifier: Apache-2.0
/// A `Decodable` type that also reads itself from a JSON object's members, member by member,
/// without `Decoder`'s containers (a keyed container box per value, the coding path, the generic
/// calls through `Decodable`): the parameters of the commands called most.
///
/// `init(reading:)` must decode exactly what `init(from:)` decodes: the same members, in the
/// same (declaration) order, each as `required` or `optional` the way the synthesised conformance
/// reads it (`Optional` members with `decodeIfPresent`), so a value or an error comes out the same
/// either way. `JSONObjectReadableTests` holds each conforming type to its `Decodable`
/// conformance over every member's kinds of wrong value.
public protocol JSONObjectReadable: Decodable {
    init(reading object: JSONObjectReader) throws
}

/// The members of one JSON object, read for a `JSONObjectReadable` type. Errors are the
/// `DecodingError`s `JSONValueDecoder` throws for the same value, with the same coding path.
public struct JSONObjectReader {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    init(members: [String: JSONValue], codingPath: [any CodingKey] = []) {
        self.members = members
        self.codingPath = codingPath
    }

    /// A member that must be there and not null (`decode(_:forKey:)`).
    public func required(_ key: String) throws -> String { try member(key).decode(String.self) }
    public func required(_ key: String) throws -> Bool { try member(key).decode(Bool.self) }
    public func required(_ key: String) throws -> Int { try member(key).decode(Int.self) }
    public func required(_ key: String) throws -> Int64 { try member(key).decode(Int64.self) }
    public func required(_ key: String) throws -> Double { try member(key).decode(Double.self) }
    /// Any other `Decodable` member, through `Decodable`.
    public func required<T: Decodable>(_ key: String, as type: T.Type = T.self) throws -> T { try member(key).decode(T.self) }

    /// A member that may be absent or null (`decodeIfPresent(_:forKey:)`).
    public func optional(_ key: String) throws -> String? { try present(key)?.decode(String.self) }
    public func optional(_ key: String) throws -> Bool? { try present(key)?.decode(Bool.self) }
    public func optional(_ key: String) throws -> Int? { try present(key)?.decode(Int.self) }
    public func optional(_ key: String) throws -> Int64? { try present(key)?.decode(Int64.self) }
    public func optional(_ key: String) throws -> Double? { try present(key)?.decode(Double.self) }
    /// Any other `Decodable` member, through `Decodable`.
    public func optional<T: Decodable>(_ key: String, as type: T.Type = T.self) throws -> T? { try present(key)?.decode(T.self) }

    /// The member's value, with its coding path only when the value is wrong (the path is an
    /// array of existentials: built on every call it would cost more than the read).
    private func member(_ key: String) throws -> Reading {
        guard let value = members[key] else {
            throw DecodingError.keyNotFound(Key(key), .init(codingPath: codingPath, debugDescription: "missing"))
        }
        return Reading(value: value, path: codingPath, key: key)
    }

    private func present(_ key: String) -> Reading? {
        guard let value = members[key], value != .null else { return nil }
        return Reading(value: value, path: codingPath, key: key)
    }

    /// One member's value and where it is, read as a `Single` value container would.
    private struct Reading {
        let value: JSONValue
        let path: [any CodingKey]
        let key: String

        /// A value of any other type decodes with its path, as a keyed container decodes it.
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try located().decode(type) }

        func decode(_ type: String.Type) throws -> String {
            guard case .string(let string) = value else { return try located().decode(type) }
            return string
        }

        func decode(_ type: Bool.Type) throws -> Bool {
            guard case .bool(let bool) = value else { return try located().decode(type) }
            return bool
        }

        func decode(_ type: Int.Type) throws -> Int { try scalar(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try scalar(type) }
        func decode(_ type: Double.Type) throws -> Double { try scalar(type) }

        private func scalar<T: Decodable>(_ type: T.Type) throws -> T {
            do {
                return try JSONValueDecoder.Single(value: value, codingPath: []).decode(type)
            } catch {
                return try located().decode(type)
            }
        }

        private func located() -> JSONValueDecoder.Single { JSONValueDecoder.Single(value: value, codingPath: path + [Key(key)]) }
    }

    /// A member's name in a coding path.
    struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension JSONValueDecoder {
    /// `decode` for every value of `T`, with whether `T` reads itself (`JSONObjectReadable`)
    /// found once, when the decoder is made (a handler's parameter decoder, made when it is
    /// registered), not by a cast on every value.
    static func decoder<T: Decodable & Sendable>(for type: T.Type) -> @Sendable (JSONValue) throws -> T {
        if let readable = T.self as? any (JSONObjectReadable & Sendable).Type { return reading(readable) }
        return { try decode(T.self, from: $0) }
    }

    /// The decoder of a `JSONObjectReadable` type (`R` is `T`, opened from the metatype).
    private static func reading<T: Decodable & Sendable, R: JSONObjectReadable & Sendable>(_: R.Type) -> @Sendable (JSONValue) throws -> T {
        { value in
            guard case .object(let members) = value else { return try decode(T.self, from: value) }
            return unsafeBitCast(try R(reading: JSONObjectReader(members: members)), to: T.self)
        }
    }
}
