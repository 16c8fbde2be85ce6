// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Storage

/// Each account's `appAccountToken`: a random UUID made the first time the account asks, the
/// same afterwards (table `payments_appstore_tokens`). The app hands it to StoreKit with a
/// purchase; the App Store signs it into the transaction and every notification about it, so
/// appd knows the account without trusting the app's word.
struct AppStoreAccountTokens: Sendable {
    let database: any Database

    /// The account's token, made now if it has none.
    func token(for user: String) async throws -> String {
        if let known = try await database.read({ tx in try Self.token(tx, user: user) }) { return known }
        let fresh = try Self.random()
        return try await database.write { tx in
            try tx.execute("INSERT INTO payments_appstore_tokens (user_id, token) VALUES (?, ?) ON CONFLICT (user_id) DO NOTHING", [.text(user), .text(fresh)])
            return try Self.token(tx, user: user) ?? fresh
        }
    }

    /// The account a token names, if any.
    func user(token: String) async throws -> String? {
        try await database.read { tx in
            try tx.query("SELECT user_id FROM payments_appstore_tokens WHERE token = ?", [.text(token)]).first?.text("user_id")
        }
    }

    static func token(_ tx: any Transaction, user: String) throws -> String? {
        try tx.query("SELECT token FROM payments_appstore_tokens WHERE user_id = ?", [.text(user)]).first?.text("token")
    }

    /// A random (version 4) UUID in lower case.
    static func random() throws -> String {
        var bytes = try Digest.randomBytes(16)
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return format(bytes)
    }

    /// `token` as a lower-case UUID (8-4-4-4-12 hex digits); nil when it is not a UUID.
    static func canonical(_ token: String) -> String? {
        let hex = Array(token.utf8)
        guard hex.count == 36 else { return nil }
        var bytes: [UInt8] = []
        var i = 0
        while i < 36 {
            if [8, 13, 18, 23].contains(i) {
                guard hex[i] == UInt8(ascii: "-") else { return nil }
                i += 1
                continue
            }
            guard let high = nibble(hex[i]), let low = nibble(hex[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        return format(bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func format(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        for (i, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(i) { out.append("-") }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return out
    }
}
