// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// What administrators do with accounts (appctl users, the console): list and search, look at
/// one, disable, enable, delete. The admin gate has let the caller through and audits the call.
extension AuthService {
    /// A page of accounts by email after `cursor`; `search` keeps those whose email contains it.
    func listUsers(cursor: String?, limit: Int?, search: String?) async throws -> AuthInterface.UserPage {
        let size = min(max(limit ?? 50, 1), options.maxPageSize)
        var needle: String?
        if let search = search?.trimmingWhitespace(), !search.isEmpty {
            guard search.utf8.count <= 254, !search.containsControlCharacters else {
                throw AuthError.validation("search", "needs up to 254 characters of an email address")
            }
            needle = search.lowercased()
        }
        let records = try await repository.listUsers(after: cursor, containing: needle, limit: size + 1)
        let kept = records.prefix(size)
        // The cursor is the stored column (a guest's holds its id), not the address shown.
        return AuthInterface.UserPage(users: kept.map(AccountSummary.init), nextCursor: records.count > size ? kept.last?.email : nil)
    }

    /// The account with this email and its linked identities.
    func user(email rawEmail: String) async throws -> AuthInterface.UserDetail {
        let email = try AuthValidation.email(rawEmail)
        guard let record = try await repository.user(email: email) else { throw AuthError.notFound }
        return AuthInterface.UserDetail(user: AccountSummary(record), identities: try await identities(userID: record.id))
    }

    func setDisabled(email rawEmail: String, _ disabled: Bool) async throws {
        let email = try AuthValidation.email(rawEmail)
        guard try await repository.setDisabled(email: email, disabled, now: now) else { throw AuthError.notFound }
    }

    /// Deletes the account as its owner's DeleteAccount does (sessions revoked, identities'
    /// tokens queued for revocation, auth.accountDeleted for every plugin to erase its data).
    func deleteUser(email rawEmail: String, causedBy cause: (any Cause)?) async throws {
        let email = try AuthValidation.email(rawEmail)
        guard let record = try await repository.user(email: email) else { throw AuthError.notFound }
        try await repository.deleteUser(userID: record.id, now: now, causedBy: cause)
        audit.notice("account deleted by an administrator", metadata: ["user.id": "\(record.id)"])
    }
}

extension AccountSummary {
    init(_ record: UserRecord) {
        self.init(
            id: record.id, email: record.address ?? "", displayName: record.displayName, onboarded: record.onboardedAt != nil,
            disabled: record.disabled, guest: record.guest, createdAt: WallTime(nanosecondsSinceEpoch: record.createdAt).rfc3339)
    }
}
