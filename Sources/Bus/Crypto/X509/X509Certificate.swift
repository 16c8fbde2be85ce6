// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// An X.509 certificate (DER), for payloads signed by a key whose certificate chain comes with
/// them (a JWS's `x5c` header: the App Store's signed transactions and notifications).
public final class X509Certificate: @unchecked Sendable {  // safe: never changed after parsing
    let pointer: OpaquePointer
    /// The certificate's DER bytes.
    public let der: [UInt8]

    /// Refuses bytes that are not exactly one DER certificate.
    public init(der: [UInt8]) throws(CryptoError) {
        guard !der.isEmpty, der.count <= Self.maxBytes else { throw CryptoError("a certificate is 1 to \(Self.maxBytes) bytes of DER") }
        guard let pointer = der.withUnsafeBufferPointer({ appd_x509_parse($0.baseAddress, $0.count) }) else {
            throw CryptoError("the bytes are not one DER X.509 certificate")
        }
        self.pointer = pointer
        self.der = der
    }

    deinit { X509_free(pointer) }

    /// Larger certificates are refused before parsing (real ones are 0.5–2 KB).
    public static let maxBytes = 16 * 1024

    /// The certificates in a file an operator installed: DER (one certificate, as Apple
    /// publishes its roots, `.cer`) or PEM (one or more `BEGIN CERTIFICATE` blocks).
    public static func load(file path: String) throws(CryptoError) -> [X509Certificate] {
        guard let bytes = FileSystem.readFile(path, limit: 1 << 20) else { throw CryptoError("cannot read the certificate file \(path)") }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN CERTIFICATE-----") else { return [try X509Certificate(der: bytes)] }
        var certificates: [X509Certificate] = []
        for block in text.split(separator: "-----BEGIN CERTIFICATE-----", omittingEmptySubsequences: false).dropFirst() {
            guard let end = block.firstRange(of: "-----END CERTIFICATE-----") else { throw CryptoError("\(path): a PEM block has no END line") }
            let body = block[..<end.lowerBound].filter { !$0.isWhitespace }
            guard let der = Base64.decode(String(body)) else { throw CryptoError("\(path): a PEM block is not base64") }
            certificates.append(try X509Certificate(der: der))
        }
        guard !certificates.isEmpty else { throw CryptoError("\(path) holds no certificate") }
        return certificates
    }

    /// Whether the certificate carries the extension `oid` (dotted decimal).
    public func hasExtension(_ oid: String) -> Bool { appd_x509_has_extension(pointer, oid) == 1 }

    /// The certificate's key, when it is a P-256 key (the only kind ES256 signatures use).
    public func p256PublicKey() throws(CryptoError) -> P256PublicKey {
        guard let key = appd_x509_public_key(pointer) else { throw CryptoError("the certificate's public key cannot be read") }
        let owned = EVPKey(key)
        guard appd_is_p256(key) == 1 else { throw CryptoError("the certificate's key is not a P-256 key") }
        return P256PublicKey(key: owned)
    }

    /// Checks that `self` (a leaf) chains through `intermediates` up to one of `roots`, every
    /// certificate valid at `time` (X.509 strict rules: CA flags, path length, key usage).
    /// Throws with OpenSSL's reason when it does not.
    public func verifyChain(intermediates: [X509Certificate], roots: [X509Certificate], at time: WallTime) throws(CryptoError) {
        guard !roots.isEmpty else { throw CryptoError("no trusted root certificate is installed") }
        let seconds = time.nanosecondsSinceEpoch / 1_000_000_000
        let result = withExtendedLifetime((intermediates, roots)) {
            let middle: [OpaquePointer?] = intermediates.map(\.pointer)
            let trusted: [OpaquePointer?] = roots.map(\.pointer)
            return appd_x509_verify(pointer, middle, Int32(middle.count), trusted, Int32(trusted.count), seconds)
        }
        guard result == 0 else {
            let reason = result > 0 ? String(cString: appd_x509_error_text(result)) : "OpenSSL could not run the check"
            throw CryptoError("the certificate chain does not verify: \(reason)")
        }
    }
}
