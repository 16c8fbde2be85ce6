// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// An OpenSSL key (`EVP_PKEY`), freed with its owner. OpenSSL allows one key to be used by
/// several threads at once as long as each has its own context, which every call here makes.
final class EVPKey: @unchecked Sendable {  // safe: the key is never changed after creation
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// The private key in a PEM file's text (PKCS#8, or the algorithm's own form); any kind,
    /// which the caller checks.
    convenience init(privatePEM pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let pointer: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let pointer else { throw CryptoError("not a PEM private key") }
        self.init(pointer)
    }

    /// Verifies `signature` over SHA-256 of `message` (PKCS#1 v1.5 for RSA, DER ECDSA for EC).
    func verifySHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pointer) == 1 else { return false }
        return signature.withUnsafeBufferPointer { s in
            message.withUnsafeBufferPointer { m in EVP_DigestVerify(context, s.baseAddress, s.count, m.baseAddress, m.count) == 1 }
        }
    }

    /// Signs SHA-256 of `message` (DER ECDSA for EC keys).
    func signSHA256(message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pointer) == 1 else { throw CryptoError("the key cannot sign") }
        var length = 0
        let sized = message.withUnsafeBufferPointer { m in EVP_DigestSign(context, nil, &length, m.baseAddress, m.count) }
        guard sized == 1 else { throw CryptoError("signing failed") }
        var out = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBufferPointer { m in EVP_DigestSign(context, &out, &length, m.baseAddress, m.count) }
        guard signed == 1 else { throw CryptoError("signing failed") }
        return Array(out.prefix(length))
    }
}
