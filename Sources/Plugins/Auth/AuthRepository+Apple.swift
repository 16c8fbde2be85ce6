// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// A provider token waiting to be revoked.
struct QueuedRevocation: Sendable {
    let id: Int64
    let provider: String
    /// Sealed (AES-256-GCM, base64).
    let token: String
    let attempts: Int
}

/// Apple's server side: sealed refresh tokens, the revocation queue, server-to-server
/// notifications.
extension AuthRepository {
    /// Keeps the identity's sealed refresh token (replacing an older one, which is queued for
    /// revocation: Apple issues a new one at each code exchange).
    func storeRefreshToken(provider: String, subject: String, sealed: String, now: Int64) async throws {
        try await database.write { tx in
            try Self.queueRevocations(tx, where: "provider = ? AND subject = ?", [.text(provider), .text(subject)], now: now)
            try tx.execute(
                "UPDATE auth_identities SET refresh_token = ? WHERE provider = ? AND subject = ?", [.text(sealed), .text(provider), .text(subject)])
        }
    }

    func dueRevocations(now: Int64, limit: Int) async throws -> [QueuedRevocation] {
        try await database.read { tx in
            try tx.query(
                "SELECT id, provider, token, attempts FROM auth_token_revocations WHERE next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
                [.integer(now), .integer(Int64(limit))]
            ).compactMap { row in
                guard let id = row.integer("id"), let provider = row.text("provider"), let token = row.text("token") else { return nil }
                return QueuedRevocation(id: id, provider: provider, token: token, attempts: Int(row.integer("attempts") ?? 0))
            }
        }
    }

    func finishRevocation(id: Int64) async throws {
        try await database.write { tx in try tx.execute("DELETE FROM auth_token_revocations WHERE id = ?", [.integer(id)]) }
    }

    func retryRevocation(id: Int64, at next: Int64, error: String) async throws {
        try await database.write { tx in
            try tx.execute(
                "UPDATE auth_token_revocations SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?",
                [.integer(next), .text(String(error.prefix(500))), .integer(id)])
        }
    }

    /// What a provider's notification did.
    enum NotificationOutcome: Sendable, Equatable {
        case applied(userID: String)
        /// Handled before (a redelivery): nothing changed.
        case duplicate
        /// No identity has that subject (unlinked or deleted meanwhile): recorded, nothing changed.
        case unknownSubject
        /// A type appd does not act on: recorded.
        case ignored
    }

    /// Applies one of Apple's server-to-server notifications once, in one transaction with the
    /// record that it was handled: `consent-revoked` unlinks the identity and ends the sessions
    /// it opened; `account-delete` deletes the account, or — when another way in remains (a
    /// password, another identity) — unlinks as for a revoked consent; `email-disabled` and
    /// `email-enabled` set whether Apple forwards mail to the relay address.
    func applyAppleNotification(
        key: String, type: String, subject: String, now: Int64, causedBy cause: (any Cause)?
    ) async throws
        -> NotificationOutcome
    {
        let outcome = try await write(evicting: { outcome in
            if case .applied(let userID) = outcome { .account(userID) } else { .nothing }
        }) { tx -> NotificationOutcome in
            guard try tx.query("SELECT 1 AS one FROM auth_provider_notifications WHERE key = ?", [.text(key)]).isEmpty else { return .duplicate }
            try tx.execute("INSERT INTO auth_provider_notifications (key, received_at) VALUES (?, ?)", [.text(key), .integer(now)])
            guard
                let userID = try tx.query(
                    "SELECT user_id FROM auth_identities WHERE provider = 'apple' AND subject = ?", [.text(subject)]
                ).first?.text("user_id")
            else { return .unknownSubject }
            switch type {
            case "consent-revoked":
                try Self.unlinkAndEndSessions(tx, userID: userID, now: now, causedBy: cause)
            case "account-delete":
                let others =
                    try tx.query("SELECT COUNT(*) AS n FROM auth_identities WHERE user_id = ? AND provider <> 'apple'", [.text(userID)])
                    .first?.integer("n") ?? 0
                let hash = try tx.query("SELECT password_hash FROM auth_users WHERE id = ?", [.text(userID)]).first?.text("password_hash") ?? ""
                if others > 0 || !hash.isEmpty {
                    try Self.unlinkAndEndSessions(tx, userID: userID, now: now, causedBy: cause)
                } else {
                    try Self.deleteUser(tx, userID: userID, now: now, causedBy: cause)
                }
            case "email-disabled", "email-enabled":
                try tx.execute(
                    "UPDATE auth_identities SET email_disabled = ? WHERE provider = 'apple' AND subject = ?",
                    [.integer(type == "email-disabled" ? 1 : 0), .text(subject)])
            default:
                return .ignored
            }
            return .applied(userID: userID)
        }
        if case .applied(let userID) = outcome { streams?.changed(userID: userID) }
        return outcome
    }

    private static func unlinkAndEndSessions(_ tx: any Transaction, userID: String, now: Int64, causedBy cause: (any Cause)?) throws {
        try removeIdentity(tx, provider: "apple", userID: userID, now: now, causedBy: cause)
        try tx.execute(
            "UPDATE auth_sessions SET revoked_at = ? WHERE user_id = ? AND opened_by = 'apple' AND revoked_at IS NULL", [.integer(now), .text(userID)])
    }
}
