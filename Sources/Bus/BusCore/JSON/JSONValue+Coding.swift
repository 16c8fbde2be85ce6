// SPDX-License-Identifier: Apache-2.0
/// Conversions between typed `Codable` values and `JSONValue`, without Foundation.
///
/// Typed bus calls never pass through here; only type-erased dispatch (the wire) does.
extension JSONValue {
    /// The JSON form of a typed value.
    public init(encoding value: some Encodable) throws {
        self = try JSONValueEncoder.encode(value)
    }

    /// Decodes a typed value from this JSON value.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONValueDecoder.decode(type, from: self)
    }

    /// `decode(as:)` for every value of `T`, chosen once: a type that reads itself
    /// (`JSONObjectReadable`) is read member by member, any other through `Decodable`. The same
    /// values and errors as `decode(as:)`.
    public static func decoder<T: Decodable & Sendable>(for type: T.Type) -> @Sendable (JSONValue) throws -> T {
        JSONValueDecoder.decoder(for: type)
    }

    /// Compact JSON text with sorted keys.
    public var jsonText: String {
        String(decoding: JSONWriter.bytes(self), as: UTF8.self)
    }
}
