import FoundationEssentials

/// Conversions between typed `Codable` values, `JSONValue` and JSON bytes.
///
/// Typed bus calls never pass through here; only type-erased dispatch (the wire) does.
public enum JSONCoding {
    /// Encodes a value as compact JSON bytes with sorted keys, so output is stable for scripts.
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// Decodes a value from JSON bytes.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        try JSONDecoder().decode(type, from: Data(bytes))
    }

    /// Parses JSON bytes into a `JSONValue`.
    public static func parse(_ bytes: some Collection<UInt8>) throws -> JSONValue {
        try JSONParser.parse(bytes)
    }
}

extension JSONValue {
    /// The JSON form of a typed value.
    public init(encoding value: some Encodable) throws {
        self = try JSONCoding.parse(JSONCoding.encode(value))
    }

    /// Decodes a typed value from this JSON value.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONCoding.decode(type, from: JSONWriter.bytes(self))
    }

    /// Compact JSON text with sorted keys.
    public var jsonText: String {
        String(decoding: JSONWriter.bytes(self), as: UTF8.self)
    }
}
