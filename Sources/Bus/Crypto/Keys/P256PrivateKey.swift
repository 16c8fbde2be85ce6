// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// A NIST P-256 private key that signs in JOSE's ES256 form (Apple's client secrets).
public struct P256PrivateKey: Sendable {
    let key: EVPKey

    /// The key in a PEM file's text: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, Apple's `.p8`) or
    /// SEC 1 (`-----BEGIN EC PRIVATE KEY-----`). Refuses any other kind of key.
    public init(pem: String) throws(CryptoError) {
        let key = try EVPKey(privatePEM: pem)
        let pointer = key.pointer
        guard appd_is_p256(pointer) == 1 else { throw CryptoError("the key is not an EC key on P-256") }
        self.key = key
    }

    /// A fresh key from the system's random generator.
    public static func generate() throws(CryptoError) -> P256PrivateKey {
        guard let pointer = appd_p256_generate() else { throw CryptoError("OpenSSL could not generate a P-256 key") }
        return P256PrivateKey(key: EVPKey(pointer))
    }

    private init(key: EVPKey) { self.key = key }

    /// The public half's point: x and y, 32 bytes each.
    public var publicPoint: (x: [UInt8], y: [UInt8]) {
        var point = [UInt8](repeating: 0, count: 65)
        guard appd_p256_public_point(key.pointer, &point, point.count) == 1 else { return ([], []) }
        return (Array(point[1..<33]), Array(point[33..<65]))
    }

    public var publicKey: P256PublicKey { P256PublicKey(key: key) }

    /// The ECDSA signature of SHA-256(`message`) as r ‖ s (64 bytes).
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let der = try key.signSHA256(message: message)
        guard let jose = ECDSASignature.jose(fromDER: der) else { throw CryptoError("OpenSSL returned a malformed signature") }
        return jose
    }
}
