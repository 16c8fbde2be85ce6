// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

extension PaymentsPlugin {
    /// Entitlements, their history, admin grants, meters, and the provider events about the
    /// user (id, type, time: not the body, which a TRANSFER shares with other accounts), the
    /// providers' ids of the user's purchases (Stripe customers, App Store original
    /// transactions) and the App Store account token.
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? {
        try await UserDataQuery.run(
            [
                UserDataQuery(
                    "entitlements", "SELECT entitlement, source, active, product, expires_at, will_renew, last_event_time, updated_at FROM payments_entitlements WHERE user_id = ?",
                    times: ["last_event_time"]),
                UserDataQuery("history", "SELECT entitlement, change, source, product, reference, at FROM payments_history WHERE user_id = ? ORDER BY seq"),
                UserDataQuery("grants", "SELECT entitlement, action, expires_at, reason, actor, at FROM payments_grants WHERE user_id = ? ORDER BY seq"),
                UserDataQuery("meters", "SELECT meter, period_start, used FROM payments_meters WHERE user_id = ?", times: ["period_start"]),
                UserDataQuery("purchases", "SELECT provider, customer_id FROM payments_customers WHERE user_id = ? ORDER BY provider, customer_id"),
                UserDataQuery("appStoreAccountToken", "SELECT token FROM payments_appstore_tokens WHERE user_id = ?"),
                UserDataQuery(
                    "providerEvents",
                    """
                    SELECT e.provider, e.event_id, e.type, e.event_time, e.received_at, u.role FROM payments_event_users u
                    JOIN payments_events e ON e.provider = u.provider AND e.event_id = u.event_id WHERE u.user_id = ? ORDER BY e.event_time
                    """, times: ["event_time"]),
            ], user: user, in: context.database)
    }
}
