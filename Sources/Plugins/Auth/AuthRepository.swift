// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Storage

/// An account row as the plugin sees it (the password hash never leaves the plugin).
struct UserRecord: Sendable {
    let id: String
    let email: String
    let passwordHash: String
    let displayName: String?
    let avatarFileID: String?
    let onboardedAt: Int64?
    let disabled: Bool
    let emailVerified: Bool
    /// A guest account (no credentials until upgraded).
    let guest: Bool
    let createdAt: Int64
    /// The password was set while the address was not proven (`password_unproven`).
    let passwordUnproven: Bool

    /// Whether the account has a password (one made by an ID-token sign-in has none).
    var hasPassword: Bool { !passwordHash.isEmpty }

    /// The account's email address; nil for an account without one (a guest's email column
    /// holds its id, which has no '@'). Asked on every signed-in call: a byte search, not a walk
    /// over grapheme clusters.
    var address: String? { email.utf8.contains(UInt8(ascii: "@")) ? email : nil }

    var user: User {
        User(
            id: id, email: address ?? "", displayName: displayName, onboarded: onboardedAt != nil, emailVerified: emailVerified, guest: guest, avatarFileId: avatarFileID,
            createdAt: WallTime(nanosecondsSinceEpoch: createdAt).rfc3339)
    }

    init?(_ row: Row) {
        guard let id = row.text("id"), let email = row.text("email"), let hash = row.text("password_hash"),
            let created = row.integer("created_at")
        else { return nil }
        self.id = id
        self.email = email
        self.passwordHash = hash
        self.displayName = row.text("display_name")
        self.avatarFileID = row.text("avatar_file_id")
        self.onboardedAt = row.integer("onboarded_at")
        self.disabled = row.integer("disabled") == 1
        self.emailVerified = row.integer("email_verified") == 1
        self.guest = row.integer("guest") == 1
        self.createdAt = created
        self.passwordUnproven = row.integer("password_unproven") == 1
    }
}

/// What a presented access token resolves to.
enum SessionLookup: Sendable {
    /// The session's cache entry (a class: handed on with one retain, the account's record not
    /// copied out of it on every signed-in call).
    case valid(SessionCache<UserRecord>.Entry)
    case expired
    case unknown
}

/// What presenting a refresh token did.
enum RotationOutcome: Sendable {
    case rotated(UserRecord)
    /// An already-rotated token came back: the whole family (of this user's) was revoked.
    case reused(userID: String?)
    /// An already-rotated token came back within the reuse interval: nothing was changed; the
    /// pair its rotation handed out (sealed, `RotationSeal`) and the account.
    case recentlyRotated(handedOut: String?, UserRecord?)
    /// The account is disabled: nothing was rotated.
    case disabled
    case expired
    case unknown
}

/// The auth plugin's repository: every read and write of its tables, and the events written
/// in the same transactions. Only SHA-256 digests of tokens are stored.
struct AuthRepository: Sendable {
    let database: any Database
    /// Shared by every `AuthRepository` of one database (the gates' and the handlers').
    let sessions: SessionCache<UserRecord>
    /// Users' open event streams: told after a commit that revokes sessions or changes an
    /// account's standing (nil for the gates' repository, which does not write).
    let streams: SessionStreams?

    /// A write that changes accounts or sessions: once it has committed, before the caller hears
    /// back, the session cache forgets what `evicting` says the write changed (everything when
    /// the write failed: its outcome is not known). Writes that change neither use
    /// `database.write` directly.
    /// With other instances on the database, the write also signals the eviction to every
    /// instance when it commits (`SessionCache.follow`).
    @discardableResult
    func write<T: Sendable>(
        evicting eviction: @escaping @Sendable (T) -> SessionCache<UserRecord>.Eviction, _ body: @escaping @Sendable (any Transaction) throws -> T
    ) async throws -> T {
        let result: T
        do {
            if database.signals == nil {
                result = try await database.write(body)
            } else {
                result = try await database.write { tx in
                    let result = try body(tx)
                    if let signal = eviction(result).signal { try tx.signal(signal) }
                    return result
                }
            }
        } catch {
            sessions.evict(.everything)
            throw error
        }
        sessions.evict(eviction(result))
        return result
    }

    /// `write` for a change to one account, known before it runs.
    @discardableResult
    func write<T: Sendable>(account userID: String, _ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await write(evicting: { _ in .account(userID) }, body)
    }

    // MARK: Accounts

    /// What a sign-up did.
    enum SignUpOutcome: Sendable {
        case created(UserRecord)
        /// The email belongs to an account; nothing was created (the owner may have been told).
        case taken
    }

    /// Creates the account, or — when the email is taken — appends `auth.signUpRepeated` for its
    /// owner (at most one per `noticeWindow`). One transaction either way, so both cost alike.
    /// A new account's email is to be verified: `verification` is the request's id and expiry.
    func createUser(
        id: String, email: String, passwordHash: String, displayName: String?, verification: (id: String, expires: Int64), now: Int64,
        noticeWindow: Int64, causedBy cause: (any Cause)?
    ) async throws -> SignUpOutcome {
        do {
            // A new account (or only an event for the owner of a taken address): nothing cached changed.
            return try await write(evicting: { _ in .nothing }) { tx in
                let taken = try tx.query("SELECT id, email FROM auth_users WHERE email = ?", [.text(email)]).first
                if let owner = taken?.text("id"), let address = taken?.text("email") {
                    if try Self.takeNotice(tx, key: "signup:" + owner, limit: 1, window: noticeWindow, now: now) {
                        try tx.append(SignUpRepeated(userId: owner, email: address), causedBy: cause)
                    }
                    return .taken
                }
                try tx.execute(
                    "INSERT INTO auth_users (id, email, password_hash, display_name, created_at, updated_at, password_unproven) VALUES (?, ?, ?, ?, ?, ?, 1)",
                    [.text(id), .text(email), .text(passwordHash), displayName.map { .text($0) } ?? .null, .integer(now), .integer(now)])
                try tx.append(UserSignedUp(userId: id, email: email), causedBy: cause)
                try Self.insertVerificationRequest(
                    tx, userID: id, email: email, id: verification.id, expires: verification.expires, now: now, causedBy: cause)
                guard let record = try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(id)]).first.flatMap(UserRecord.init) else {
                    throw StorageError(kind: .other, message: "the new account was not found")
                }
                return .created(record)
            }
        } catch let error as StorageError where error.kind == .constraint {
            return .taken  // another sign-up of the same email committed first
        }
    }

    /// Counts one notice under `key`; false when `limit` were already counted in the window.
    static func takeNotice(_ tx: any Transaction, key: String, limit: Int, window: Int64, now: Int64) throws -> Bool {
        let row = try tx.query("SELECT count, window_start FROM auth_notices WHERE key = ?", [.text(key)]).first
        var count = Int(row?.integer("count") ?? 0)
        var start = row?.integer("window_start") ?? now
        if now - start >= window {
            count = 0
            start = now
        }
        guard count < limit else { return false }
        try tx.execute(
            """
            INSERT INTO auth_notices (key, count, window_start) VALUES (?, ?, ?)
            ON CONFLICT(key) DO UPDATE SET count = excluded.count, window_start = excluded.window_start
            """,
            [.text(key), .integer(Int64(count + 1)), .integer(start)])
        return true
    }

    func user(email: String) async throws -> UserRecord? {
        try await database.read { tx in
            try tx.query("SELECT * FROM auth_users WHERE email = ?", [.text(email)]).first.flatMap(UserRecord.init)
        }
    }

    func user(id: String) async throws -> UserRecord? {
        try await database.read { tx in
            try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(id)]).first.flatMap(UserRecord.init)
        }
    }

    func replacePasswordHash(userID: String, hash: String, now: Int64) async throws {
        try await write(account: userID) { tx in
            try tx.execute("UPDATE auth_users SET password_hash = ?, updated_at = ? WHERE id = ?", [.text(hash), .integer(now), .text(userID)])
        }
    }

    func completeOnboarding(userID: String, now: Int64, causedBy cause: (any Cause)?) async throws -> UserRecord? {
        try await write(account: userID) { tx in
            let changed = try tx.execute(
                "UPDATE auth_users SET onboarded_at = ?, updated_at = ? WHERE id = ? AND onboarded_at IS NULL",
                [.integer(now), .integer(now), .text(userID)])
            if changed > 0 { try tx.append(OnboardingCompleted(userId: userID), causedBy: cause) }
            return try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(userID)]).first.flatMap(UserRecord.init)
        }
    }

    /// Sets (or, with nil, clears) the account's profile picture.
    func setAvatar(userID: String, fileID: String?, now: Int64) async throws -> UserRecord? {
        try await write(account: userID) { tx in
            try tx.execute(
                "UPDATE auth_users SET avatar_file_id = ?, updated_at = ? WHERE id = ?", [fileID.map { .text($0) } ?? .null, .integer(now), .text(userID)])
            return try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(userID)]).first.flatMap(UserRecord.init)
        }
    }

    func updateProfile(userID: String, displayName: String?, now: Int64) async throws -> UserRecord? {
        try await write(account: userID) { tx in
            try tx.execute(
                "UPDATE auth_users SET display_name = ?, updated_at = ? WHERE id = ?",
                [displayName.map { .text($0) } ?? .null, .integer(now), .text(userID)])
            return try tx.query("SELECT * FROM auth_users WHERE id = ?", [.text(userID)]).first.flatMap(UserRecord.init)
        }
    }

    /// Sets a new password hash, revokes every session except `keepAccessDigest`'s, and voids
    /// every pending reset request (a token mailed before the change must not undo it).
    func changePassword(userID: String, hash: String, keepAccessDigest: String?, now: Int64) async throws {
        try await write(account: userID) { tx in
            try tx.execute(
                "UPDATE auth_users SET password_hash = ?, updated_at = ?, password_unproven = 1 - email_verified WHERE id = ?",
                [.text(hash), .integer(now), .text(userID)])
            try tx.execute("UPDATE auth_reset_requests SET used_at = ? WHERE user_id = ? AND used_at IS NULL", [.integer(now), .text(userID)])
            try tx.execute(
                "UPDATE auth_sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND access_digest IS DISTINCT FROM ?",
                [.integer(now), .text(userID), keepAccessDigest.map { .text($0) } ?? .null])
        }
        streams?.changed(userID: userID)
    }

    /// Erasure happens in the same transaction: every logged event about the user becomes a
    /// tombstone, before auth.accountDeleted (which stays, for the consumers) is appended.
    func deleteUser(userID: String, now: Int64, causedBy cause: (any Cause)?) async throws {
        try await write(account: userID) { tx in try Self.deleteUser(tx, userID: userID, now: now, causedBy: cause) }
        streams?.changed(userID: userID)
    }

    /// The account's erasure inside `tx`: its providers' refresh tokens queued for revocation,
    /// the rows deleted (identities and sessions cascade), every logged event about it made a
    /// tombstone, then auth.accountDeleted (which stays, for the consumers).
    static func deleteUser(_ tx: any Transaction, userID: String, now: Int64, causedBy cause: (any Cause)?) throws {
        try queueRevocations(tx, where: "user_id = ?", [.text(userID)], now: now)
        try tx.execute("DELETE FROM auth_users WHERE id = ?", [.text(userID)])
        try tx.redactEvents(about: userID)
        try IdempotencyLog.erase(scope: IdempotencyLog.userScope(userID), in: tx)
        try tx.append(AccountDeleted(userId: userID), causedBy: cause)
    }

    /// Accounts ordered by email after `cursor`, at most `limit`; with `text` (lower case), only
    /// those whose email contains it (emails are stored in lower case).
    func listUsers(after cursor: String?, containing text: String?, limit: Int) async throws -> [UserRecord] {
        try await database.read { tx in
            guard let text else {
                return try tx.query(
                    "SELECT * FROM auth_users WHERE email > ? ORDER BY email LIMIT ?", [.text(cursor ?? ""), .integer(Int64(limit))]
                ).compactMap(UserRecord.init)
            }
            // LIKE's own characters are matched as themselves.
            var pattern = "%"
            for character in text {
                if character == "%" || character == "_" || character == "!" { pattern.append("!") }
                pattern.append(character)
            }
            pattern.append("%")
            return try tx.query(
                "SELECT * FROM auth_users WHERE email > ? AND email LIKE ? ESCAPE '!' ORDER BY email LIMIT ?",
                [.text(cursor ?? ""), .text(pattern), .integer(Int64(limit))]
            ).compactMap(UserRecord.init)
        }
    }

    /// Disables or enables an account. Its sessions stay, but the session gate refuses every
    /// one of them with AccountDisabled while it is disabled. False when unknown.
    func setDisabled(email: String, _ disabled: Bool, now: Int64) async throws -> Bool {
        let userID = try await write(evicting: { $0.map { .account($0) } ?? .nothing }) { tx -> String? in
            guard let id = try tx.query("SELECT id FROM auth_users WHERE email = ?", [.text(email)]).first?.text("id") else { return nil }
            try tx.execute("UPDATE auth_users SET disabled = ?, updated_at = ? WHERE id = ?", [.integer(disabled ? 1 : 0), .integer(now), .text(id)])
            return id
        }
        guard let userID else { return false }
        streams?.changed(userID: userID)
        return true
    }
}
