// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// A provider identity linked to an account.
struct IdentityRecord: Sendable {
    let provider: String
    let subject: String
    let userID: String
    let email: String?
    /// Apple stopped forwarding mail to the relay address (an email-disabled notification).
    let emailDisabled: Bool
    let createdAt: Int64

    init?(_ row: Row) {
        guard let provider = row.text("provider"), let subject = row.text("subject"), let user = row.text("user_id"),
            let created = row.integer("created_at")
        else { return nil }
        self.provider = provider
        self.subject = subject
        self.userID = user
        self.email = row.text("email")
        self.emailDisabled = row.integer("email_disabled") == 1
        self.createdAt = created
    }
}

/// Identities: which account a (provider, subject) pair signs in to.
extension AuthRepository {
    /// What an ID-token sign-in found or made.
    enum IdentitySignIn: Sendable {
        /// The identity was linked already (`created` false) or its account was just made.
        case account(UserRecord, created: Bool)
        /// The identity was just linked to the account with its email: every session of the
        /// account was ended and a password set before the address was proven dropped.
        case linkedByEmail(UserRecord)
        /// No identity, and an account has the token's email but the two cannot be linked
        /// automatically (one of the emails is not verified).
        case emailBelongsToAnotherAccount
    }

    /// The account `identity` is linked to.
    func user(identity: VerifiedIdentity) async throws -> UserRecord? {
        try await database.read { tx in
            try tx.query(
                "SELECT u.* FROM auth_identities i JOIN auth_users u ON u.id = i.user_id WHERE i.provider = ? AND i.subject = ?",
                [.text(identity.provider.rawValue), .text(identity.subject)]
            ).first.flatMap(UserRecord.init)
        }
    }

    /// Finds the identity's account, or links the identity to the account with its email
    /// (only when the provider vouches for the email and the account's own email is verified),
    /// or makes a new account without a password. One transaction: two first sign-ins at once
    /// make one account (the loser's insert fails its constraint and the caller asks again).
    func signIn(
        identity: VerifiedIdentity, email: String, newUserID: String, displayName: String?, now: Int64, causedBy cause: (any Cause)?
    ) async throws -> IdentitySignIn {
        // Linking by email ends the account's sessions; the other outcomes change nothing cached.
        try await write(evicting: { outcome in
            if case .linkedByEmail(let record) = outcome { .account(record.id) } else { .nothing }
        }) { tx in
            let provider = identity.provider.rawValue
            if let linked = try tx.query(
                "SELECT u.* FROM auth_identities i JOIN auth_users u ON u.id = i.user_id WHERE i.provider = ? AND i.subject = ?",
                [.text(provider), .text(identity.subject)]
            ).first.flatMap(UserRecord.init) {
                return .account(linked, created: false)
            }
            if let existing = try tx.query("SELECT * FROM auth_users WHERE email = ?", [.text(email)]).first.flatMap(UserRecord.init) {
                guard identity.emailVerified, existing.emailVerified else { return .emailBelongsToAnotherAccount }
                let taken = try tx.query("SELECT 1 AS one FROM auth_identities WHERE user_id = ? AND provider = ?", [.text(existing.id), .text(provider)])
                guard taken.isEmpty else { return .emailBelongsToAnotherAccount }
                try Self.insertIdentity(tx, identity, userID: existing.id, now: now, causedBy: cause)
                // Whoever else holds a session or the password may be who registered the
                // victim's address before the victim proved it (pre-registration takeover).
                try tx.execute("UPDATE auth_sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", [.integer(now), .text(existing.id)])
                try tx.append(SignedOut(userId: existing.id, everywhere: true), causedBy: cause)
                if existing.passwordUnproven {
                    try tx.execute(
                        "UPDATE auth_users SET password_hash = '', password_unproven = 0, updated_at = ? WHERE id = ?", [.integer(now), .text(existing.id)])
                }
                guard let secured = try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(existing.id)]).first.flatMap(UserRecord.init) else {
                    throw StorageError(kind: .other, message: "the linked account was not found")
                }
                return .linkedByEmail(secured)
            }
            try tx.execute(
                """
                INSERT INTO auth_users (id, email, password_hash, display_name, email_verified, created_at, updated_at)
                VALUES (?, ?, '', ?, ?, ?, ?)
                """,
                [.text(newUserID), .text(email), displayName.map { .text($0) } ?? .null, .integer(identity.emailVerified ? 1 : 0), .integer(now), .integer(now)])
            try tx.append(UserSignedUp(userId: newUserID, email: email), causedBy: cause)
            try Self.insertIdentity(tx, identity, userID: newUserID, now: now, causedBy: cause)
            guard let record = try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(newUserID)]).first.flatMap(UserRecord.init) else {
                throw StorageError(kind: .other, message: "the new account was not found")
            }
            return .account(record, created: true)
        }
    }

    /// What linking an identity to a signed-in account did.
    enum LinkOutcome: Sendable {
        case linked
        /// Linked to this account already: nothing changed.
        case alreadyLinked
        /// Linked to another account.
        case inUse
        /// The account has another identity of this provider.
        case providerTaken
    }

    func link(identity: VerifiedIdentity, userID: String, now: Int64, causedBy cause: (any Cause)?) async throws -> LinkOutcome {
        try await database.write { tx in
            let provider = identity.provider.rawValue
            if let owner = try tx.query(
                "SELECT user_id FROM auth_identities WHERE provider = ? AND subject = ?", [.text(provider), .text(identity.subject)]
            ).first?.text("user_id") {
                return owner == userID ? .alreadyLinked : .inUse
            }
            let taken = try tx.query("SELECT 1 AS one FROM auth_identities WHERE user_id = ? AND provider = ?", [.text(userID), .text(provider)])
            guard taken.isEmpty else { return .providerTaken }
            try Self.insertIdentity(tx, identity, userID: userID, now: now, causedBy: cause)
            return .linked
        }
    }

    /// What unlinking did.
    enum UnlinkOutcome: Sendable {
        case unlinked
        case notLinked
        /// It is the account's only way in (no password, no other identity): nothing changed.
        case lastSignInMethod
    }

    func unlink(provider: IdentityProvider, userID: String, now: Int64, causedBy cause: (any Cause)?) async throws -> UnlinkOutcome {
        try await database.write { tx in
            let identities = try tx.query("SELECT provider FROM auth_identities WHERE user_id = ?", [.text(userID)]).compactMap { $0.text("provider") }
            guard identities.contains(provider.rawValue) else { return .notLinked }
            let hash = try tx.query("SELECT password_hash FROM auth_users WHERE id = ?", [.text(userID)]).first?.text("password_hash") ?? ""
            guard !hash.isEmpty || identities.count > 1 else { return .lastSignInMethod }
            try Self.removeIdentity(tx, provider: provider.rawValue, userID: userID, now: now, causedBy: cause)
            return .unlinked
        }
    }

    func identities(userID: String) async throws -> [IdentityRecord] {
        try await database.read { tx in
            try tx.query("SELECT * FROM auth_identities WHERE user_id = ? ORDER BY provider", [.text(userID)]).compactMap(IdentityRecord.init)
        }
    }

    /// When the session behind `accessDigest` was opened by a sign-in (refreshes keep it).
    func sessionOpened(accessDigest: String) async throws -> Int64? {
        try await database.read { tx in
            try tx.query("SELECT created_at FROM auth_sessions WHERE access_digest = ? AND revoked_at IS NULL", [.text(accessDigest)]).first?.integer("created_at")
        }
    }

    /// Removes the account's identity of `provider`, its refresh token queued for revocation.
    static func removeIdentity(_ tx: any Transaction, provider: String, userID: String, now: Int64, causedBy cause: (any Cause)?) throws {
        try queueRevocations(tx, where: "user_id = ? AND provider = ?", [.text(userID), .text(provider)], now: now)
        try tx.execute("DELETE FROM auth_identities WHERE user_id = ? AND provider = ?", [.text(userID), .text(provider)])
        try tx.append(IdentityUnlinked(userId: userID, provider: provider), causedBy: cause)
    }

    /// Moves the sealed refresh tokens of the identities matching `condition` to the revocation
    /// queue (the revocation service calls the provider, retrying until it answers).
    static func queueRevocations(_ tx: any Transaction, where condition: String, _ arguments: [SQLValue], now: Int64) throws {
        try tx.execute(
            """
            INSERT INTO auth_token_revocations (provider, token, next_attempt_at, created_at)
            SELECT provider, refresh_token, ?, ? FROM auth_identities WHERE \(condition) AND refresh_token IS NOT NULL
            """,
            [.integer(now), .integer(now)] + arguments)
    }

    private static func insertIdentity(_ tx: any Transaction, _ identity: VerifiedIdentity, userID: String, now: Int64, causedBy cause: (any Cause)?) throws {
        try tx.execute(
            """
            INSERT INTO auth_identities (provider, subject, user_id, email, email_verified, created_at, last_used_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(identity.provider.rawValue), .text(identity.subject), .text(userID), identity.email.map { .text($0) } ?? .null,
                .integer(identity.emailVerified ? 1 : 0), .integer(now), .integer(now),
            ])
        try tx.append(IdentityLinked(userId: userID, provider: identity.provider.rawValue), causedBy: cause)
    }
}
