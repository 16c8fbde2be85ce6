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
        if trimmed.utf8.allSatisfy({ $0 < 0x80 }) { return try asciiEmail(Array(trimmed.utf8)) }
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

    /// `email` for an address of ASCII bytes without control characters.
    private static func asciiEmail(_ bytes: [UInt8]) throws(AuthError) -> String {
        let at = UInt8(ascii: "@"), dot = UInt8(ascii: "."), dash = UInt8(ascii: "-")
        guard let split = bytes.firstIndex(of: at), split > 0, split < bytes.count - 1, bytes.lastIndex(of: at) == split else {
            throw .validation("email", "needs exactly one @ between a name and a domain")
        }
        guard split <= 64 else { throw .validation("email", "has a name part longer than 64 characters") }
        guard !bytes.contains(where: { $0 == 0x20 || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: ",") }) else {
            throw .validation("email", "contains a character not allowed in an address")
        }
        let domain = bytes[(split + 1)...]
        let labels = domain.split(separator: dot, omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty && $0.first != dash && $0.last != dash }) else {
            throw .validation("email", "needs a domain like example.com")
        }
        return String(decoding: bytes[...split] + domain.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }

    /// 8–1024 bytes, not equal to the email.
    static func password(_ password: String, email: String) throws(AuthError) {
        let bytes = password.utf8.count
        guard bytes >= 8 else { throw .validation("password", "needs at least 8 characters") }
        guard bytes <= 1024 else { throw .validation("password", "is longer than 1024 bytes") }
        guard password.lowercased() != email.lowercased() else { throw .validation("password", "must not be the email address") }
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
