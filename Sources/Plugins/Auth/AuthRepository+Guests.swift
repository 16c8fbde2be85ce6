// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// Guest accounts: made without credentials, upgraded in place (same id, all data kept), and
/// deleted through the normal erasure path when idle.
extension AuthRepository {
    /// A guest account; its email column holds its id (see migration 9).
    func createGuest(id: String, now: Int64, causedBy cause: (any Cause)?) async throws -> UserRecord {
        try await database.write { tx in
            try tx.execute(
                """
                INSERT INTO auth_users (id, email, password_hash, guest, created_at, updated_at, last_seen_at) VALUES (?, ?, '', 1, ?, ?, ?)
                """, [.text(id), .text(id), .integer(now), .integer(now), .integer(now)])
            try tx.append(GuestCreated(userId: id), causedBy: cause)
            guard let record = try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(id)]).first.flatMap(UserRecord.init) else {
                throw StorageError(kind: .other, message: "the new guest was not found")
            }
            return record
        }
    }

    /// What upgrading a guest did.
    enum UpgradeOutcome: Sendable {
        case upgraded(UserRecord)
        case notAGuest
        /// Another account has the address: nothing changed.
        case emailTaken
    }

    /// Gives a guest an address and a password hash (either may be absent: an identity link
    /// brings its own way in); the account stops being a guest. With `verification`, a
    /// verification request for the address is recorded (a password account's address must
    /// be proven); `emailVerified` marks an address a provider vouched for.
    func upgradeGuest(
        userID: String, email: String?, passwordHash: String?, emailVerified: Bool, verification: (id: String, expires: Int64)?, now: Int64,
        causedBy cause: (any Cause)?
    ) async throws -> UpgradeOutcome {
        do {
            return try await write(account: userID) { tx -> UpgradeOutcome in
                guard let record = try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(userID)]).first.flatMap(UserRecord.init), record.guest else {
                    return .notAGuest
                }
                if let email {
                    if let owner = try tx.query("SELECT id FROM auth_users WHERE email = ?", [.text(email)]).first?.text("id") {
                        // As at sign-up: the owner is told, the caller is not.
                        try tx.append(SignUpRepeated(userId: owner, email: email), causedBy: cause)
                        return .emailTaken
                    }
                    try tx.execute(
                        "UPDATE auth_users SET email = ?, email_verified = ?, guest = 0, updated_at = ? WHERE id = ?",
                        [.text(email), .integer(emailVerified ? 1 : 0), .integer(now), .text(userID)])
                    try tx.append(UserSignedUp(userId: userID, email: email), causedBy: cause)
                    if let verification, !emailVerified {
                        try Self.insertVerificationRequest(
                            tx, userID: userID, email: email, id: verification.id, expires: verification.expires, now: now, causedBy: cause)
                    }
                } else {
                    try tx.execute("UPDATE auth_users SET guest = 0, updated_at = ? WHERE id = ?", [.integer(now), .text(userID)])
                }
                if let passwordHash {
                    try tx.execute(
                        "UPDATE auth_users SET password_hash = ?, password_unproven = 1 - email_verified WHERE id = ?", [.text(passwordHash), .text(userID)])
                }
                guard let upgraded = try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(userID)]).first.flatMap(UserRecord.init) else {
                    return .notAGuest
                }
                return .upgraded(upgraded)
            }
        } catch let error as StorageError where error.kind == .constraint {
            return .emailTaken  // another account took the address meanwhile
        }
    }

    /// Deletes up to `limit` guests not seen since `before`, each through the normal erasure
    /// path (its events redacted, auth.accountDeleted for every plugin); returns how many.
    func deleteIdleGuests(before: Int64, limit: Int, now: Int64) async throws -> Int {
        let ids = try await database.read { tx in
            try tx.query(
                "SELECT id FROM auth_users WHERE guest = 1 AND last_seen_at < ? ORDER BY last_seen_at LIMIT ?", [.integer(before), .integer(Int64(limit))]
            ).compactMap { $0.text("id") }
        }
        var deleted = 0
        for id in ids {
            // Checked again in the write: a guest seen or upgraded meanwhile stays.
            let gone = try await write(account: id) { tx -> Bool in
                guard try !tx.query("SELECT 1 AS one FROM auth_users WHERE id = ? AND guest = 1 AND last_seen_at < ?", [.text(id), .integer(before)]).isEmpty
                else { return false }
                try Self.deleteUser(tx, userID: id, now: now, causedBy: nil)
                return true
            }
            if gone {
                deleted += 1
                streams?.changed(userID: id)
            }
        }
        return deleted
    }
}
