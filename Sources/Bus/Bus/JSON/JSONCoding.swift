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
        try decode(JSONValue.self, from: bytes)
    }
}

extension JSONValue {
    /// The JSON form of a typed value.
    public init(encoding value: some Encodable) throws {
        self = try JSONCoding.parse(JSONCoding.encode(value))
    }

    /// Decodes a typed value from this JSON value.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONCoding.decode(type, from: JSONCoding.encode(self))
    }

    /// Compact JSON text with sorted keys.
    public var jsonText: String {
        // Encoding a JSONValue cannot fail: every case maps to a JSON primitive or container.
        // (Non-finite doubles are the exception; they render as null rather than trap.)
        (try? JSONCoding.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}
