// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// An RSA public key that checks RSASSA-PKCS1-v1_5 SHA-256 signatures (JOSE's RS256).
public struct RSAPublicKey: Sendable {
    /// Smaller moduli are refused: 2048 bits is what Apple and Google publish and what RFC 7518
    /// requires for RS256.
    public static let minimumBits = 2048
    public static let maximumBits = 8192
    let key: EVPKey

    /// The key with big-endian `modulus` and `exponent` (a JWK's `n` and `e`, decoded).
    public init(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        let n = Array(modulus.drop { $0 == 0 }), e = Array(exponent.drop { $0 == 0 })
        guard n.count * 8 >= Self.minimumBits - 7, n.count * 8 <= Self.maximumBits else {
            throw CryptoError("an RSA key needs a modulus of \(Self.minimumBits) to \(Self.maximumBits) bits")
        }
        // 3 or more, odd, and at most 64 bits (OpenSSL refuses larger public exponents anyway).
        guard (1...8).contains(e.count), let last = e.last, last & 1 == 1, e != [1] else { throw CryptoError("an RSA key needs an odd exponent above 1") }
        guard let pointer = appd_rsa_public_key(n, n.count, e, e.count) else { throw CryptoError("OpenSSL refused the RSA key") }
        key = EVPKey(pointer)
        guard appd_key_bits(pointer) >= Int32(Self.minimumBits) else {
            throw CryptoError("an RSA key needs a modulus of at least \(Self.minimumBits) bits")
        }
    }

    init(key: EVPKey) { self.key = key }

    /// Whether `signature` is this key's PKCS#1 v1.5 signature of SHA-256(`message`).
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        key.verifySHA256(signature: signature, message: message)
    }
}
