// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A JSON Web Signature in compact serialization (RFC 7515 §7.1): parsed strictly, not yet
/// verified. Verification is `JSONWebKey.verify`, which accepts only the algorithm its key names.
public struct CompactJWS: Sendable {
    /// Larger tokens are refused before any decoding (ID tokens are 1–2 KB).
    public static let maxBytes = 16 * 1024

    public let header: [String: JSONValue]
    /// The header's `alg`.
    public let algorithm: String
    /// The header's `kid`, when present.
    public let keyID: String?
    public let payload: [UInt8]
    public let signature: [UInt8]
    /// `base64url(header) . base64url(payload)`: the bytes the signature covers.
    public let signingInput: [UInt8]

    /// `maxBytes`: larger texts are refused before decoding (the default suits ID tokens; the
    /// App Store's payloads carry a certificate chain and nest other signed payloads).
    public init(_ text: String, maxBytes: Int = CompactJWS.maxBytes) throws(JOSEError) {
        guard text.utf8.count <= maxBytes else { throw .malformed("longer than \(maxBytes) bytes") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("not three dot-separated parts") }
        guard let headerBytes = Base64.decodeURLStrict(parts[0]), let payload = Base64.decodeURLStrict(parts[1]),
            let signature = Base64.decodeURLStrict(parts[2])
        else { throw .malformed("a part is not unpadded base64url") }
        guard let header = (try? JSONParser.parse(headerBytes, maxDepth: 8))?.objectValue else { throw .malformed("the header is not a JSON object") }
        guard case .string(let algorithm)? = header["alg"] else { throw .malformed("the header has no alg") }
        // RFC 7515 §4.1.11: a critical extension this code does not understand must be refused.
        guard header["crit"] == nil else { throw .malformed("the header has critical extensions") }
        let keyID: String?
        switch header["kid"] {
        case nil: keyID = nil
        case .string(let id)?: keyID = id
        default: throw .malformed("the header's kid is not a string")
        }
        guard !signature.isEmpty else { throw .algorithm(algorithm) }  // alg none and its look-alikes
        self.header = header
        self.algorithm = algorithm
        self.keyID = keyID
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
    }

    /// The payload as a JSON object (a JWT's claims).
    public func claims() throws(JOSEError) -> [String: JSONValue] {
        guard let claims = (try? JSONParser.parse(payload, maxDepth: 16))?.objectValue else { throw .malformed("the payload is not a JSON object") }
        return claims
    }

    /// Signs `claims` with RS256 under `header` (whose `alg` is set to RS256).
    public static func signRS256(header: [String: JSONValue], claims: JSONValue, key: RSAPrivateKey) throws(CryptoError) -> String {
        var header = header
        header["alg"] = "RS256"
        let input =
            Base64.encode(Array(JSONValue.object(header).jsonText.utf8), urlSafe: true) + "." + Base64.encode(Array(claims.jsonText.utf8), urlSafe: true)
        return input + "." + Base64.encode(try key.sign(Array(input.utf8)), urlSafe: true)
    }

    /// Signs `claims` with ES256 under `header` (whose `alg` is set to ES256).
    public static func signES256(header: [String: JSONValue], claims: JSONValue, key: P256PrivateKey) throws(CryptoError) -> String {
        var header = header
        header["alg"] = "ES256"
        let input =
            Base64.encode(Array(JSONValue.object(header).jsonText.utf8), urlSafe: true) + "." + Base64.encode(Array(claims.jsonText.utf8), urlSafe: true)
        let signature = try key.sign(Array(input.utf8))
        return input + "." + Base64.encode(signature, urlSafe: true)
    }
}
