// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// ECDSA P-256 signatures between OpenSSL's DER form and JOSE's fixed-size r ‖ s (RFC 7518 §3.4).
enum ECDSASignature {
    /// r ‖ s (64 bytes) as DER; nil for any other length or a zero r or s.
    static func der(fromJOSE signature: [UInt8]) -> [UInt8]? {
        guard signature.count == 64 else { return nil }
        guard let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let r = signature.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = signature.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(sig, &out)
        guard length > 0, let out else { return nil }
        defer { CRYPTO_free(out, #file, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// A DER ECDSA signature as r ‖ s, each left-padded to 32 bytes.
    static func jose(fromDER der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let sig = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            defer { ECDSA_SIG_free(sig) }
            var out = [UInt8](repeating: 0, count: 64)
            guard let r = ECDSA_SIG_get0_r(sig), let s = ECDSA_SIG_get0_s(sig) else { return nil }
            let okR = out.withUnsafeMutableBufferPointer { BN_bn2binpad(r, $0.baseAddress, 32) }
            let okS = out.withUnsafeMutableBufferPointer { BN_bn2binpad(s, $0.baseAddress! + 32, 32) }
            return okR == 32 && okS == 32 ? out : nil
        }
    }
}
