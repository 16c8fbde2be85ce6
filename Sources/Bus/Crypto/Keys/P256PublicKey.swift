// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// A NIST P-256 public key that checks ECDSA SHA-256 signatures in JOSE's form (ES256: r and
/// s, 32 bytes each, concatenated).
public struct P256PublicKey: Sendable {
    let key: EVPKey

    /// The key at point (`x`, `y`), 32 big-endian bytes each (a JWK's `x` and `y`, decoded).
    /// Refuses a point that is not on the curve.
    public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
        guard x.count == 32, y.count == 32 else { throw CryptoError("a P-256 key needs 32-byte x and y") }
        let point = [0x04] + x + y
        guard let pointer = appd_p256_public_key(point, point.count) else { throw CryptoError("the point is not on P-256") }
        key = EVPKey(pointer)
    }

    init(key: EVPKey) { self.key = key }

    /// Whether `signature` (r ‖ s, 64 bytes) is this key's ECDSA signature of SHA-256(`message`).
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let der = ECDSASignature.der(fromJOSE: signature) else { return false }
        return key.verifySHA256(signature: der, message: message)
    }
}
