// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Storage

/// Sessions: made at sign-in, resolved per call (through the session cache), rotated by a
/// refresh, revoked by a sign-out.
extension AuthRepository {
    /// `openedBy`: the identity provider the sign-in used (nil for a password).
    func createSession(
        userID: String, family: String, accessDigest: String, accessExpires: Int64, refreshDigest: String,
        refreshExpires: Int64, openedBy: String?, now: Int64, causedBy cause: (any Cause)?
    ) async throws {
        // A new session changes none already cached (unknown tokens are never cached).
        try await database.write { tx in
            try tx.execute(
                """
                INSERT INTO auth_sessions (user_id, family, access_digest, access_expires_at, refresh_digest, refresh_expires_at, created_at, opened_by)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(userID), .text(family), .text(accessDigest), .integer(accessExpires), .text(refreshDigest), .integer(refreshExpires), .integer(now),
                    openedBy.map { .text($0) } ?? .null,
                ])
            try tx.execute("UPDATE auth_users SET last_seen_at = ? WHERE id = ?", [.integer(now), .text(userID)])
            try tx.append(SignedIn(userId: userID), causedBy: cause)
        }
    }

    /// Resolves an access token against the store (revoked and unknown look the same), by its
    /// digest. Served from the session cache when it can be; unknown tokens are not cached.
    func session(accessToken: String, now: Int64) async throws -> SessionLookup {
        if let cached = cachedSession(accessToken: accessToken, now: now) { return cached }
        let generation = sessions.generation
        let accessDigest = SecretToken.digest(accessToken)
        let found = try await database.read { tx -> SessionCache<UserRecord>.Entry? in
            let rows = try tx.query(
                """
                SELECT s.access_expires_at AS expires, u.* FROM auth_sessions s JOIN auth_users u ON u.id = s.user_id
                WHERE s.access_digest = ? AND s.revoked_at IS NULL
                """, [.text(accessDigest)])
            guard let row = rows.first, let record = UserRecord(row), let expires = row.integer("expires") else { return nil }
            return SessionCache<UserRecord>.Entry(record: record, expiresAt: expires)
        }
        guard let found else { return .unknown }
        sessions.store(token: accessToken, accessDigest: accessDigest, userID: found.record.id, found, readAt: generation)
        return found.expiresAt <= now ? .expired : .valid(found)
    }

    /// `session` from the cache alone: nil when the token is not cached.
    func cachedSession(accessToken: String, now: Int64) -> SessionLookup? {
        sessions.lookup(token: accessToken).map { $0.expiresAt <= now ? .expired : .valid($0) }
    }

    /// Rotates a refresh token: the old one is remembered so a replay revokes the family, unless
    /// it comes within `grace` of its rotation (two appctl runs refreshing at once, on any
    /// instance: the caller opens `handedOut`, the pair the first rotation made, sealed). A
    /// disabled account's tokens are not rotated.
    func rotate(
        refreshDigest: String, newAccessDigest: String, accessExpires: Int64, newRefreshDigest: String, refreshExpires: Int64,
        handedOut: String, now: Int64, grace: Int64
    ) async throws -> RotationOutcome {
        // A rotation evicts only the access token it replaces; a replay that revoked the family,
        // every session of its account.
        let (outcome, _) = try await write(evicting: { (outcome: RotationOutcome, replaced: String?) in
            switch outcome {
            case .rotated(let user): replaced.map { .session(userID: user.id, accessDigest: $0) } ?? .nothing
            case .reused(let userID?): .account(userID)
            case .reused(nil): .everything
            default: .nothing
            }
        }) { tx -> (RotationOutcome, String?) in
            let rows = try tx.query(
                "SELECT id, user_id, family, refresh_expires_at, access_digest FROM auth_sessions WHERE refresh_digest = ? AND revoked_at IS NULL",
                [.text(refreshDigest)])
            guard let row = rows.first, let id = row.integer("id"), let userID = row.text("user_id"), let family = row.text("family"),
                let expires = row.integer("refresh_expires_at")
            else {
                let reused = try tx.query("SELECT family, rotated_at, handed_out FROM auth_rotated_refresh WHERE digest = ?", [.text(refreshDigest)]).first
                guard let family = reused?.text("family") else { return (.unknown, nil) }
                if let rotatedAt = reused?.integer("rotated_at"), now - rotatedAt < grace {
                    let user = try tx.query(
                        "SELECT u.* FROM auth_sessions s JOIN auth_users u ON u.id = s.user_id WHERE s.family = ? LIMIT 1", [.text(family)]
                    ).first.flatMap(UserRecord.init)
                    return (.recentlyRotated(handedOut: reused?.text("handed_out"), user), nil)
                }
                try tx.execute("UPDATE auth_sessions SET revoked_at = ? WHERE family = ? AND revoked_at IS NULL", [.integer(now), .text(family)])
                let owner = try tx.query("SELECT user_id FROM auth_sessions WHERE family = ? LIMIT 1", [.text(family)]).first?.text("user_id")
                return (.reused(userID: owner), nil)
            }
            guard expires > now else { return (.expired, nil) }
            let disabled = try tx.query("SELECT disabled FROM auth_users WHERE id = ?", [.text(userID)]).first?.integer("disabled") == 1
            guard !disabled else { return (.disabled, nil) }
            // Sealed pairs whose interval is over go (few: the partial index holds only those).
            try tx.execute("UPDATE auth_rotated_refresh SET handed_out = NULL WHERE handed_out IS NOT NULL AND rotated_at <= ?", [.integer(now - grace)])
            try tx.execute(
                "INSERT INTO auth_rotated_refresh (digest, family, rotated_at, handed_out) VALUES (?, ?, ?, ?)",
                [.text(refreshDigest), .text(family), .integer(now), .text(handedOut)])
            try tx.execute(
                "UPDATE auth_sessions SET access_digest = ?, access_expires_at = ?, refresh_digest = ?, refresh_expires_at = ? WHERE id = ?",
                [.text(newAccessDigest), .integer(accessExpires), .text(newRefreshDigest), .integer(refreshExpires), .integer(id)])
            try tx.execute("UPDATE auth_users SET last_seen_at = ? WHERE id = ?", [.integer(now), .text(userID)])
            guard let user = try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(userID)]).first.flatMap(UserRecord.init) else {
                return (.unknown, nil)
            }
            return (.rotated(user), row.text("access_digest"))
        }
        if case .reused(let userID?) = outcome { streams?.changed(userID: userID) }
        return outcome
    }

    func revokeSession(accessDigest: String, userID: String, now: Int64, causedBy cause: (any Cause)?) async throws {
        try await write(evicting: { _ in .session(userID: userID, accessDigest: accessDigest) }) { tx in
            try tx.execute("UPDATE auth_sessions SET revoked_at = ? WHERE access_digest = ? AND revoked_at IS NULL", [.integer(now), .text(accessDigest)])
            try tx.append(SignedOut(userId: userID, everywhere: false), causedBy: cause)
        }
        streams?.changed(userID: userID)
    }

    func revokeAllSessions(userID: String, now: Int64, causedBy cause: (any Cause)?) async throws {
        try await write(account: userID) { tx in
            try tx.execute("UPDATE auth_sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", [.integer(now), .text(userID)])
            try tx.append(SignedOut(userId: userID, everywhere: true), causedBy: cause)
        }
        streams?.changed(userID: userID)
    }
}
