// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

extension AuthPlugin {
    /// The account, its sign-in identities and its sessions' metadata: never the password hash,
    /// a token's digest or a provider's refresh token.
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? {
        try await UserDataQuery.run(
            [
                UserDataQuery(
                    "account",
                    "SELECT id, email, display_name, avatar_file_id, onboarded_at, disabled, email_verified, guest, created_at, updated_at, last_seen_at FROM auth_users "
                        + "WHERE id = ?"
                ),
                UserDataQuery(
                    "identities",
                    "SELECT provider, subject, email, email_verified, email_disabled, created_at, last_used_at FROM auth_identities WHERE user_id = ? ORDER BY created_at"),
                UserDataQuery(
                    "sessions",
                    "SELECT id, opened_by, created_at, access_expires_at, refresh_expires_at, revoked_at FROM auth_sessions WHERE user_id = ? ORDER BY id"),
            ], user: user, in: context.database)
    }
}
