// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// AES-256-GCM for secrets kept at rest (a provider's refresh token): a fresh 96-bit nonce per
/// message, the 128-bit tag checked on opening, associated data bound to the ciphertext.
/// Sealed form: nonce (12) ‖ ciphertext ‖ tag (16).
public struct AESGCM: Sendable {
    public static let keyBytes = 32
    private let key: [UInt8]

    public init(key: [UInt8]) throws(CryptoError) {
        guard key.count == Self.keyBytes else { throw CryptoError("an AES-256 key is 32 bytes") }
        self.key = key
    }

    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let nonce = try Digest.randomBytes(12)
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError("out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        var length: Int32 = 0
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1,
            associatedData.isEmpty || EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1,
            EVP_EncryptUpdate(context, &out, &length, plaintext, Int32(plaintext.count)) == 1
        else { throw CryptoError("encryption failed") }
        var total = Int(length)
        let finished = out.withUnsafeMutableBufferPointer { EVP_EncryptFinal_ex(context, $0.baseAddress! + total, &length) }
        guard finished == 1, EVP_CIPHER_CTX_ctrl(context, 0x10 /* EVP_CTRL_GCM_GET_TAG */, 16, &tag) == 1 else { throw CryptoError("encryption failed") }
        total += Int(length)
        return nonce + out.prefix(total) + tag
    }

    /// The plaintext, or nil when the sealed bytes were changed, the key is another, or the
    /// associated data differs.
    public func open(_ sealed: [UInt8], associatedData: [UInt8] = []) -> [UInt8]? {
        guard sealed.count >= 28 else { return nil }
        let nonce = Array(sealed[0..<12]), tag = Array(sealed[(sealed.count - 16)...]), body = Array(sealed[12..<(sealed.count - 16)])
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        var length: Int32 = 0
        var out = [UInt8](repeating: 0, count: body.count + 16)
        var expected = tag
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1,
            associatedData.isEmpty || EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1,
            EVP_DecryptUpdate(context, &out, &length, body, Int32(body.count)) == 1,
            EVP_CIPHER_CTX_ctrl(context, 0x11 /* EVP_CTRL_GCM_SET_TAG */, 16, &expected) == 1
        else { return nil }
        let total = Int(length)
        let finished = out.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(context, $0.baseAddress! + total, &length) }
        guard finished == 1 else { return nil }
        return Array(out.prefix(total + Int(length)))
    }
}
