// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// An RSA private key that signs RSASSA-PKCS1-v1_5 SHA-256 (JOSE's RS256): a Google service
/// account's key, for the assertion exchanged for an access token.
public struct RSAPrivateKey: Sendable {
    let key: EVPKey

    /// The key in a PEM file's text: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, what a service
    /// account's JSON key holds) or PKCS#1 (`-----BEGIN RSA PRIVATE KEY-----`). Refuses any
    /// other kind of key and moduli under `RSAPublicKey.minimumBits`.
    public init(pem: String) throws(CryptoError) {
        let key = try EVPKey(privatePEM: pem)
        let pointer = key.pointer
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA else { throw CryptoError("the key is not an RSA key") }
        guard appd_key_bits(pointer) >= Int32(RSAPublicKey.minimumBits) else {
            throw CryptoError("an RSA key needs a modulus of at least \(RSAPublicKey.minimumBits) bits")
        }
        self.key = key
    }

    /// The PKCS#1 v1.5 signature of SHA-256(`message`).
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.signSHA256(message: message)
    }

    public var publicKey: RSAPublicKey { RSAPublicKey(key: key) }
}
