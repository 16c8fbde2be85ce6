// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// The templates' AuthValidation rules; each failure names the field and the reason.
enum AuthValidation {
    /// Trimmed, syntax-checked, domain lower-cased. Returns the normalised address.
    static func email(_ raw: String) throws(AuthError) -> String {
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty else { throw .validation("email", "is required") }
        guard !trimmed.containsControlCharacters else { throw .validation("email", "contains a control character") }
        guard trimmed.utf8.count <= 254 else { throw .validation("email", "is longer than 254 characters") }
        // An ASCII address — nearly every one — is checked byte by byte; other text by
        // character (so a combining mark after `@` or `.` is not split from it). Same rules,
        // same order, same messages.
        if trimmed.utf8.allSatisfy({ $0 < 0x80 }) { return try asciiEmail(trimmed) }
        return try characterEmail(trimmed)
    }

    /// `email` for a trimmed address of any text without control characters, by character.
    static func characterEmail(_ trimmed: String) throws(AuthError) -> String {
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last, !local.isEmpty, !domain.isEmpty else {
            throw .validation("email", "needs exactly one @ between a name and a domain")
        }
        guard local.utf8.count <= 64 else { throw .validation("email", "has a name part longer than 64 characters") }
        guard !trimmed.contains(where: { $0.isWhitespace || $0.isNewline || $0 == "<" || $0 == ">" || $0 == "," }) else {
            throw .validation("email", "contains a character not allowed in an address")
        }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty && !$0.hasPrefix("-") && !$0.hasSuffix("-") }) else {
            throw .validation("email", "needs a domain like example.com")
        }
        return "\(local)@\(domain.lowercased())"
    }

    /// `email` for a trimmed address of ASCII bytes without control characters: the same rules,
    /// order and messages as `characterEmail`, checked on the string's own bytes; the address is
    /// copied only when its domain has capitals to lower.
    static func asciiEmail(_ trimmed: String) throws(AuthError) -> String {
        var address = trimmed
        let checked: Result<String?, AuthError> = address.withUTF8 { bytes in
            let at = UInt8(ascii: "@"), dot = UInt8(ascii: "."), dash = UInt8(ascii: "-")
            guard let split = bytes.firstIndex(of: at), split > 0, split < bytes.count - 1, bytes.lastIndex(of: at) == split else {
                return .failure(.validation("email", "needs exactly one @ between a name and a domain"))
            }
            guard split <= 64 else { return .failure(.validation("email", "has a name part longer than 64 characters")) }
            guard !bytes.contains(where: { $0 == 0x20 || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: ",") }) else {
                return .failure(.validation("email", "contains a character not allowed in an address"))
            }
            // The domain's labels, between dots: at least two, none empty, none starting or
            // ending with a dash.
            var labels = 0, start = split + 1, capitals = false
            for index in (split + 1)...bytes.count where index == bytes.count || bytes[index] == dot {
                guard index > start, bytes[start] != dash, bytes[index - 1] != dash else {
                    return .failure(.validation("email", "needs a domain like example.com"))
                }
                capitals = capitals || bytes[start..<index].contains { $0 >= 65 && $0 <= 90 }
                labels += 1
                start = index + 1
            }
            guard labels >= 2 else { return .failure(.validation("email", "needs a domain like example.com")) }
            guard capitals else { return .success(nil) }
            return .success(
                String(unsafeUninitializedCapacity: bytes.count) { out in
                    for index in bytes.indices { out[index] = index > split && bytes[index] >= 65 && bytes[index] <= 90 ? bytes[index] + 32 : bytes[index] }
                    return bytes.count
                })
        }
        switch checked {
        case .failure(let error): throw error
        case .success(let lowered): return lowered ?? address
        }
    }

    /// 8–1024 bytes, not equal to the email.
    static func password(_ password: String, email: String) throws(AuthError) {
        let bytes = password.utf8.count
        guard bytes >= 8 else { throw .validation("password", "needs at least 8 characters") }
        guard bytes <= 1024 else { throw .validation("password", "is longer than 1024 bytes") }
        guard !sameIgnoringCase(password, email) else { throw .validation("password", "must not be the email address") }
    }

    /// Whether two strings are equal once lower-cased: ASCII text compared byte by byte without
    /// copies, any other through `lowercased()`.
    static func sameIgnoringCase(_ a: String, _ b: String) -> Bool {
        let lower = { (byte: UInt8) in byte >= 65 && byte <= 90 ? byte + 32 : byte }
        if a.utf8.allSatisfy({ $0 < 0x80 }) && b.utf8.allSatisfy({ $0 < 0x80 }) {
            return a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
        }
        return a.lowercased() == b.lowercased()
    }

    static let displayNameLimit = TextLimit(characters: 100)

    /// Up to 100 characters after trimming; empty means none.
    static func displayName(_ raw: String?) throws(AuthError) -> String? {
        guard let raw else { return nil }
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty else { return nil }
        if let problem = displayNameLimit.violation(of: trimmed) { throw .validation("displayName", problem) }
        guard !trimmed.containsControlCharacters else { throw .validation("displayName", "contains a control character (such as a terminal escape)") }
        return trimmed
    }
}
