// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// Password resets: a request (and its durable event) first, the token minted later for the
/// mailer's capability; only digests are stored.
extension AuthRepository {
    /// Records a reset request and its durable event (no token yet) when an enabled account
    /// has `email` and fewer than `limit` requests for it were counted in `window` (under
    /// `noticeKey`, a digest of the email). One transaction whether or not the account exists,
    /// so the reply's timing tells nothing (security review findings 10 and 13).
    func requestReset(
        email: String, noticeKey: String, id: String, expires: Int64, now: Int64, limit: Int, window: Int64, causedBy cause: (any Cause)?
    ) async throws {
        // Changes no account or session: the session cache stays.
        try await database.write { tx in
            guard try Self.takeNotice(tx, key: "reset:" + noticeKey, limit: limit, window: window, now: now) else { return }
            guard let user = try tx.query("SELECT * FROM auth_users WHERE email = ?", [.text(email)]).first.flatMap(UserRecord.init), !user.disabled
            else { return }
            try tx.execute(
                "INSERT INTO auth_reset_requests (id, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
                [.text(id), .text(user.id), .integer(expires), .integer(now)])
            try tx.append(
                PasswordResetRequested(requestId: id, userId: user.id, email: user.email, expiresAt: WallTime(nanosecondsSinceEpoch: expires).rfc3339),
                causedBy: cause)
        }
    }

    /// Stores the digest of a freshly minted token for a pending request (replacing an earlier
    /// one); nil when the request is unknown, used or expired.
    func issueResetToken(requestID: String, digest: String, now: Int64) async throws -> (email: String, expires: Int64)? {
        try await database.write { tx in
            let rows = try tx.query(
                """
                SELECT u.email, r.expires_at FROM auth_reset_requests r JOIN auth_users u ON u.id = r.user_id
                WHERE r.id = ? AND r.used_at IS NULL AND r.expires_at > ?
                """, [.text(requestID), .integer(now)])
            guard let row = rows.first, let email = row.text("email"), let expires = row.integer("expires_at") else { return nil }
            try tx.execute(
                "UPDATE auth_reset_requests SET token_digest = ?, issued_at = ? WHERE id = ?", [.text(digest), .integer(now), .text(requestID)])
            return (email, expires)
        }
    }

    /// The account a usable reset token belongs to (unknown, used or expired: nil).
    func resetTokenOwner(digest: String, now: Int64) async throws -> UserRecord? {
        try await database.read { tx in
            try tx.query(
                """
                SELECT u.* FROM auth_reset_requests r JOIN auth_users u ON u.id = r.user_id
                WHERE r.token_digest = ? AND r.used_at IS NULL AND r.expires_at > ?
                """, [.text(digest), .integer(now)]
            ).first.flatMap(UserRecord.init)
        }
    }

    /// Uses a reset token once: sets the password, revokes every session, and voids every
    /// other pending request of the account. The token came through the account's mailbox, so
    /// its email is verified from then on. False when the token is unknown, used or expired.
    func resetPassword(digest: String, hash: String, now: Int64) async throws -> Bool {
        let owner = try await write(evicting: { $0.map { .account($0) } ?? .nothing }) { tx -> String? in
            let rows = try tx.query(
                "SELECT user_id FROM auth_reset_requests WHERE token_digest = ? AND used_at IS NULL AND expires_at > ?",
                [.text(digest), .integer(now)])
            guard let userID = rows.first?.text("user_id") else { return nil }
            try tx.execute("UPDATE auth_reset_requests SET used_at = ? WHERE user_id = ? AND used_at IS NULL", [.integer(now), .text(userID)])
            // The reset link proved the address: the new password is the owner's.
            try tx.execute(
                "UPDATE auth_users SET password_hash = ?, updated_at = ?, password_unproven = 0 WHERE id = ?", [.text(hash), .integer(now), .text(userID)])
            try tx.execute("UPDATE auth_sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", [.integer(now), .text(userID)])
            try Self.markVerified(tx, userID: userID, now: now, causedBy: nil)
            return userID
        }
        guard let owner else { return false }
        streams?.changed(userID: owner)
        return true
    }
}
