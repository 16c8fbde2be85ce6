// SPDX-License-Identifier: Apache-2.0
import BusCore
import COpenSSL

/// scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`.
public enum Scrypt {
    public struct Parameters: Sendable, Hashable {
        /// log2 of N (the CPU/memory cost).
        public var logN: Int
        public var r: Int
        public var p: Int

        public init(logN: Int, r: Int, p: Int) {
            self.logN = logN
            self.r = r
            self.p = p
        }

        /// N=2^17, r=8, p=1: about 128 MiB and half a second here.
        public static let interactive = Parameters(logN: 17, r: 8, p: 1)

        /// Memory the derivation needs: 128·r·N bytes for V, plus 128·r·p for B.
        public var memoryBytes: UInt64 { 128 * UInt64(r) * (UInt64(1) << UInt64(logN)) + 128 * UInt64(r) * UInt64(p) }
    }

    /// Derives `length` bytes. `maxmem` is set explicitly from the parameters: OpenSSL's
    /// default (32 MB) refuses N=2^17, r=8.
    public static func derive(password: [UInt8], salt: [UInt8], parameters: Parameters, length: Int) throws(CryptoError) -> [UInt8] {
        guard (1...22).contains(parameters.logN), (1...32).contains(parameters.r), (1...16).contains(parameters.p), (16...128).contains(length)
        else { throw CryptoError("scrypt parameters out of the supported range") }
        var out = [UInt8](repeating: 0, count: length)
        let maxmem = parameters.memoryBytes + (16 << 20)
        let ok = password.withUnsafeBufferPointer { pass in
            salt.withUnsafeBufferPointer { s in
                pass.withMemoryRebound(to: CChar.self) { passChars in
                    EVP_PBE_scrypt(
                        passChars.baseAddress, pass.count, s.baseAddress, s.count, UInt64(1) << UInt64(parameters.logN),
                        UInt64(parameters.r), UInt64(parameters.p), maxmem, &out, length)
                }
            }
        }
        guard ok == 1 else { throw CryptoError("scrypt failed (out of memory?)") }
        return out
    }
}
