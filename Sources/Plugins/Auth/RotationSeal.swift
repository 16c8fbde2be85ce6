// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// The token pair a refresh handed out, kept in the database for the reuse interval so that a
/// second `Refresh` with the same token — two appctl runs at once, an app retrying a refresh
/// whose reply was lost, on this instance or another — gets the same pair instead of tripping
/// reuse detection.
///
/// Sealed (AES-256-GCM) with a key derived from the refresh token it replaced
/// (HMAC-SHA-256 of the token over a fixed label): only the digest of that token is stored, so
/// only a caller presenting it can open the pair, and the database holds no usable token. The
/// associated data binds the seal to that token's row. Cleared once the interval is over.
enum RotationSeal {
    struct Pair: Sendable, Equatable {
        let accessToken: String
        let refreshToken: String
        /// Nanoseconds since the epoch.
        let expiresAt: Int64

        func session(_ user: User) -> Session {
            Session(accessToken: accessToken, refreshToken: refreshToken, expiresAt: WallTime(nanosecondsSinceEpoch: expiresAt).rfc3339, user: user)
        }
    }

    private static let label = Array("appd.auth.rotation-seal.v1".utf8)

    private static func sealer(_ replaced: String) throws(CryptoError) -> AESGCM {
        try AESGCM(key: Digest.hmacSHA256(key: Array(replaced.utf8), data: label))
    }

    /// The pair sealed under `replaced` (the refresh token presented), base64.
    static func seal(_ pair: Pair, replacing replaced: String) throws -> String {
        // Tokens are base64url: a space never occurs in one.
        let plaintext = "\(pair.accessToken) \(pair.refreshToken) \(pair.expiresAt)"
        return Base64.encode(try sealer(replaced).seal(Array(plaintext.utf8), associatedData: Array(SecretToken.digest(replaced).utf8)))
    }

    /// The pair, or nil when `sealed` was not sealed under `replaced` (or was changed).
    static func open(_ sealed: String, replacing replaced: String) -> Pair? {
        guard let bytes = Base64.decode(sealed), let sealer = try? sealer(replaced),
            let plaintext = sealer.open(bytes, associatedData: Array(SecretToken.digest(replaced).utf8))
        else { return nil }
        let parts = String(decoding: plaintext, as: UTF8.self).split(separator: " ")
        guard parts.count == 3, let expiresAt = Int64(parts[2]) else { return nil }
        return Pair(accessToken: String(parts[0]), refreshToken: String(parts[1]), expiresAt: expiresAt)
    }
}
