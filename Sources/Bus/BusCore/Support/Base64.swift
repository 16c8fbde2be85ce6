// SPDX-License-Identifier: Apache-2.0
/// Base64 (RFC 4648) in the two alphabets appd needs: standard without padding (PHC strings)
/// or with it (data: URLs, file pieces over the bus), and URL-safe without padding (tokens).
public enum Base64 {
    static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8], urlSafe: Bool = false, padded: Bool = false) -> String {
        let alphabet = urlSafe ? url : standard
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            // One append each: an array literal here would allocate per three bytes.
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        if padded { out += Array(repeating: UInt8(ascii: "="), count: (4 - out.count % 4) % 4) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded (or padded) base64 of either alphabet; nil for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(byte - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(byte - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(byte - 48 + 52)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "/"), UInt8(ascii: "_"): values.append(63)
            case UInt8(ascii: "="): continue
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i + 4 <= values.count {
            let n = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6 | UInt32(values[i + 3])
            out += [UInt8(n >> 16 & 255), UInt8(n >> 8 & 255), UInt8(n & 255)]
            i += 4
        }
        let rest = values.count - i
        if rest >= 2 {
            var n = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12
            if rest == 3 { n |= UInt32(values[i + 2]) << 6 }
            out.append(UInt8(n >> 16 & 255))
            if rest == 3 { out.append(UInt8(n >> 8 & 255)) }
        }
        return out
    }

    /// Decodes base64url exactly as JOSE writes it (RFC 7515 §2): the URL-safe alphabet, no
    /// padding, no whitespace, and the unused low bits of the last character zero, so each
    /// byte string has one encoding. Nil for anything else.
    public static func decodeURLStrict(_ text: some StringProtocol) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(byte - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(byte - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(byte - 48 + 52)
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        switch values.count % 4 {
        case 1: return nil
        case 2: guard values.last! & 0x0F == 0 else { return nil }
        case 3: guard values.last! & 0x03 == 0 else { return nil }
        default: break
        }
        return decode(String(decoding: text.utf8, as: UTF8.self))
    }
}
