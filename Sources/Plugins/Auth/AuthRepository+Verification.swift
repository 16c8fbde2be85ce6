// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// Email verification: a request (and its durable event) first, the token minted later for
/// the mailer's capability; only digests are stored. A token verifies the address it was
/// mailed to, and only while the account still has that address.
extension AuthRepository {
    /// Records a verification request for `user` and its durable event, inside `tx`.
    static func insertVerificationRequest(
        _ tx: any Transaction, userID: String, email: String, id: String, expires: Int64, now: Int64, causedBy cause: (any Cause)?
    ) throws {
        try tx.execute(
            "INSERT INTO auth_email_verifications (id, user_id, email, expires_at, created_at) VALUES (?, ?, ?, ?, ?)",
            [.text(id), .text(userID), .text(email), .integer(expires), .integer(now)])
        try tx.append(
            EmailVerificationRequested(requestId: id, userId: userID, email: email, expiresAt: WallTime(nanosecondsSinceEpoch: expires).rfc3339),
            causedBy: cause)
    }

    /// Records a request when an enabled, unverified account has `email` and fewer than
    /// `limit` were counted for the address in `window`. One transaction either way.
    func requestVerification(
        email: String, noticeKey: String, id: String, expires: Int64, now: Int64, limit: Int, window: Int64, causedBy cause: (any Cause)?
    ) async throws {
        try await database.write { tx in
            guard try Self.takeNotice(tx, key: "verify:" + noticeKey, limit: limit, window: window, now: now) else { return }
            guard let user = try tx.query("SELECT * FROM auth_users WHERE email = ?", [.text(email)]).first.flatMap(UserRecord.init),
                !user.disabled, !user.emailVerified
            else { return }
            try Self.insertVerificationRequest(tx, userID: user.id, email: user.email, id: id, expires: expires, now: now, causedBy: cause)
        }
    }

    /// Stores the digest of a freshly minted token for a pending request (replacing an earlier
    /// one); nil when the request is unknown, used, expired, or its address is no longer the account's.
    func issueVerificationToken(requestID: String, digest: String, now: Int64) async throws -> (email: String, expires: Int64)? {
        try await database.write { tx in
            let rows = try tx.query(
                """
                SELECT v.email, v.expires_at FROM auth_email_verifications v JOIN auth_users u ON u.id = v.user_id
                WHERE v.id = ? AND v.used_at IS NULL AND v.expires_at > ? AND u.email = v.email AND u.email_verified = 0
                """, [.text(requestID), .integer(now)])
            guard let row = rows.first, let email = row.text("email"), let expires = row.integer("expires_at") else { return nil }
            try tx.execute(
                "UPDATE auth_email_verifications SET token_digest = ?, issued_at = ? WHERE id = ?", [.text(digest), .integer(now), .text(requestID)])
            return (email, expires)
        }
    }

    /// Uses a verification token once: the account's email becomes verified and every pending
    /// request of the account is void. False when the token is unknown, used, expired, or the
    /// account's address changed since it was mailed.
    /// The first verification of the address ends every session of the account but
    /// `keepAccessDigest`'s: one opened before the address was proven may be whoever registered it.
    func verifyEmail(digest: String, keepAccessDigest: String? = nil, now: Int64, causedBy cause: (any Cause)?) async throws -> Bool {
        let owner = try await write(evicting: { $0.map { .account($0) } ?? .nothing }) { tx -> String? in
            let rows = try tx.query(
                """
                SELECT v.user_id FROM auth_email_verifications v JOIN auth_users u ON u.id = v.user_id
                WHERE v.token_digest = ? AND v.used_at IS NULL AND v.expires_at > ? AND u.email = v.email
                """, [.text(digest), .integer(now)])
            guard let userID = rows.first?.text("user_id") else { return nil }
            try tx.execute("UPDATE auth_email_verifications SET used_at = ? WHERE user_id = ? AND used_at IS NULL", [.integer(now), .text(userID)])
            if try Self.markVerified(tx, userID: userID, now: now, causedBy: cause) {
                try tx.execute(
                    "UPDATE auth_sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND access_digest IS DISTINCT FROM ?",
                    [.integer(now), .text(userID), keepAccessDigest.map { .text($0) } ?? .null])
            }
            return userID
        }
        guard let owner else { return false }
        streams?.changed(userID: owner)
        return true
    }

    /// Sets the account's email verified (with auth.emailVerified when it was not); true when
    /// it was not.
    @discardableResult
    static func markVerified(_ tx: any Transaction, userID: String, now: Int64, causedBy cause: (any Cause)?) throws -> Bool {
        let changed = try tx.execute(
            "UPDATE auth_users SET email_verified = 1, updated_at = ? WHERE id = ? AND email_verified = 0", [.integer(now), .text(userID)])
        if changed > 0 { try tx.append(EmailVerified(userId: userID), causedBy: cause) }
        return changed > 0
    }
}
