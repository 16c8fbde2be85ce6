// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A public key from a JWK set (RFC 7517), bound to the one algorithm it may verify: RS256
/// for RSA keys, ES256 for P-256 keys. A token whose header names anything else — `none`,
/// HS256 (a forger "signing" with the public key), PS256 — is refused by this key.
public struct JSONWebKey: Sendable {
    public enum Material: Sendable {
        case rsa(RSAPublicKey)
        case p256(P256PublicKey)
    }

    public let keyID: String?
    /// The one algorithm this key verifies.
    public let algorithm: String
    public let material: Material

    /// Nil for a key that can never verify a signature here (`use: enc`, another key type,
    /// curve or algorithm); throws for a key that claims to be usable but is malformed.
    public init?(_ json: [String: JSONValue]) throws(JOSEError) {
        if case .string(let use)? = json["use"], use != "sig" { return nil }
        let keyID = json["kid"]?.stringValue
        let named = json["alg"]?.stringValue
        func bytes(_ name: String) throws(JOSEError) -> [UInt8] {
            guard let text = json[name]?.stringValue, let value = Base64.decodeURLStrict(text) else {
                throw .malformed("key \(keyID ?? "?") has no base64url '\(name)'")
            }
            return value
        }
        switch json["kty"]?.stringValue {
        case "RSA":
            guard named == nil || named == "RS256" else { return nil }
            do {
                material = .rsa(try RSAPublicKey(modulus: try bytes("n"), exponent: try bytes("e")))
            } catch let error as CryptoError {
                throw .malformed("key \(keyID ?? "?"): \(error)")
            } catch let error as JOSEError { throw error } catch { throw .malformed("key \(keyID ?? "?")") }
            algorithm = "RS256"
        case "EC":
            guard json["crv"]?.stringValue == "P-256", named == nil || named == "ES256" else { return nil }
            do {
                material = .p256(try P256PublicKey(x: try bytes("x"), y: try bytes("y")))
            } catch let error as CryptoError {
                throw .malformed("key \(keyID ?? "?"): \(error)")
            } catch let error as JOSEError { throw error } catch { throw .malformed("key \(keyID ?? "?")") }
            algorithm = "ES256"
        default:
            return nil
        }
        self.keyID = keyID
    }

    /// Checks `jws`'s signature; its header must name exactly this key's algorithm.
    public func verify(_ jws: CompactJWS) throws(JOSEError) {
        guard jws.algorithm == algorithm else { throw .algorithm(jws.algorithm) }
        let valid: Bool
        switch material {
        case .rsa(let key): valid = key.verify(signature: jws.signature, message: jws.signingInput)
        case .p256(let key): valid = key.verify(signature: jws.signature, message: jws.signingInput)
        }
        guard valid else { throw .signature }
    }
}

/// A provider's published keys (`{"keys": [...]}`), the usable ones by key id.
public struct JSONWebKeySet: Sendable {
    public static let maxKeys = 64
    public let keys: [JSONWebKey]

    public init(keys: [JSONWebKey]) { self.keys = keys }

    /// Parses a JWKS document. Keys that cannot verify here are skipped; a malformed usable
    /// key, a missing `keys` array or more than `maxKeys` entries refuse the whole set (a
    /// provider's set is all or nothing: better the last good one than half of a broken one).
    public init(parsing bytes: [UInt8]) throws(JOSEError) {
        guard let document = (try? JSONParser.parse(bytes, maxDepth: 8))?.objectValue, case .array(let entries)? = document["keys"] else {
            throw .malformed("not a JWK set: no 'keys' array")
        }
        guard entries.count <= Self.maxKeys else { throw .malformed("more than \(Self.maxKeys) keys") }
        var keys: [JSONWebKey] = []
        for entry in entries {
            guard let object = entry.objectValue else { throw .malformed("a key is not a JSON object") }
            if let key = try JSONWebKey(object) { keys.append(key) }
        }
        self.keys = keys
    }

    /// The key with `id`; with no id, the only key there is (nil when there are several).
    public func key(id: String?) -> JSONWebKey? {
        guard let id else { return keys.count == 1 ? keys[0] : nil }
        return keys.first { $0.keyID == id }
    }

    /// Verifies `jws` with the key its header names.
    public func verify(_ jws: CompactJWS) throws(JOSEError) {
        guard let key = key(id: jws.keyID) else { throw .unknownKey(jws.keyID) }
        try key.verify(jws)
    }
}
