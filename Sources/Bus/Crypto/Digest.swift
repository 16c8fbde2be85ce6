// SPDX-License-Identifier: Apache-2.0
import BusCore
#if canImport(Glibc)
import Glibc
#endif
import COpenSSL

/// SHA-256, HMAC-SHA256, constant-time comparison and the system CSPRNG, from OpenSSL libcrypto.
public enum Digest {
    /// SHA-256 of `data` (32 bytes). Every signed-in call hashes its token: the algorithm is
    /// fetched from the provider once (`SHA256()` fetches it on every call, which cost more than
    /// the hashing).
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        let hashed = data.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, sha256Algorithm.pointer, nil) == 1
            }
        }
        // The digest of a buffer cannot fail short of memory running out: no weak result is returned.
        precondition(hashed && length == 32, "SHA-256 failed (out of memory)")
        return out
    }

    /// SHA-256 as fetched once from the default provider (libcrypto keeps it for the process).
    private static let sha256Algorithm: FetchedAlgorithm = {
        guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { preconditionFailure("libcrypto has no SHA-256") }
        return FetchedAlgorithm(pointer: md)
    }()

    /// HMAC-SHA256 of `data` under `key` (32 bytes).
    public static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), d.baseAddress, d.count, &out, &length)
            }
        }
        return Array(out.prefix(Int(length)))
    }

    /// Equality whose time does not depend on where the inputs differ (lengths are not secret).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) == 0 } }
    }

    /// `count` bytes from the system CSPRNG. Throws rather than return weak bytes.
    public static func randomBytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&out, Int32(count)) == 1 else { throw CryptoError("the system random generator failed") }
        return out
    }
}

/// An algorithm fetched from libcrypto's provider: immutable once fetched, shared by every thread.
private struct FetchedAlgorithm: @unchecked Sendable {  // safe: an EVP_MD is read-only after its fetch (OpenSSL 3: fetched objects are thread-safe)
    let pointer: OpaquePointer
}

/// A cryptographic operation failed; never carries secret material.
public struct CryptoError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Digest {
    /// `bytes` as lowercase hex, two digits each.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }

    /// SHA-256 of a file's contents, read 1 MiB at a time (a database file does not have to fit
    /// in memory), as lowercase hex; throws with the path and errno when it cannot be read.
    public static func sha256Hex(ofFile path: String) throws(CryptoError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CryptoError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("cannot make a digest context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else { throw CryptoError("SHA-256 is not available") }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CryptoError("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            _ = buffer.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, n) }
        }
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &out, &length) == 1 else { throw CryptoError("SHA-256 failed") }
        return hex(Array(out.prefix(Int(length))))
    }
}
