// SPDX-License-Identifier: Apache-2.0
import BusCore
extension String {
    /// Whether the text contains `word`, byte by byte and ignoring ASCII case: how header values
    /// (`Connection`, `Accept`, `Content-Type`) are searched on every request, without a
    /// `String` search or a lower-cased copy.
    package func containsIgnoringASCIICase(_ word: StaticString) -> Bool {
        var text = self
        return text.withUTF8 { bytes in
            word.withUTF8Buffer { needle in
                guard bytes.count >= needle.count else { return false }
                return (0...(bytes.count - needle.count)).contains { start in Self.equalIgnoringASCIICase(bytes[start..<start + needle.count], needle) }
            }
        }
    }

    /// Whether the text starts with `word`, ignoring ASCII case.
    package func hasPrefixIgnoringASCIICase(_ word: StaticString) -> Bool {
        var text = self
        return text.withUTF8 { bytes in
            word.withUTF8Buffer { needle in bytes.count >= needle.count && Self.equalIgnoringASCIICase(bytes[0..<needle.count], needle) }
        }
    }

    private static func equalIgnoringASCIICase(_ a: Slice<UnsafeBufferPointer<UInt8>>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        zip(a, b).allSatisfy { lower($0) == lower($1) }
    }

    private static func lower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
}
