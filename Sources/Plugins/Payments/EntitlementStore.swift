// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// One source's hold on one entitlement for one user (a row of `payments_entitlements`).
struct EntitlementRow: Sendable, Equatable {
    var user: String
    var entitlement: String
    /// revenuecat, stripe or admin.
    var source: String
    var active: Bool
    var product: String?
    var expiresAt: Int64?
    var willRenew: Bool
    /// The time of the event that last changed it: an older event never overrides it.
    var lastEventTime: Int64
}

/// The entitlement rows, their history and their events, inside one write transaction.
/// Every change is recorded in `payments_history` and published as a durable
/// `payments.entitlementChanged` event in the same transaction.
struct EntitlementStore {
    let tx: any Transaction
    let now: Int64
    /// What caused the change (a webhook call, an admin's command): its events carry it on.
    var cause: (any Cause)? = nil
    /// Restore recomputes quietly and reports only the net changes.
    var quiet = false

    func row(_ user: String, _ entitlement: String, _ source: String) throws -> EntitlementRow? {
        try tx.query(
            "SELECT * FROM payments_entitlements WHERE user_id = ? AND entitlement = ? AND source = ?",
            [.text(user), .text(entitlement), .text(source)]
        ).first.flatMap(Self.decode)
    }

    func rows(_ user: String) throws -> [EntitlementRow] {
        try tx.query("SELECT * FROM payments_entitlements WHERE user_id = ? ORDER BY entitlement, source", [.text(user)]).compactMap(Self.decode)
    }

    static func decode(_ row: Row) -> EntitlementRow? {
        guard let user = row.text("user_id"), let entitlement = row.text("entitlement"), let source = row.text("source") else { return nil }
        return EntitlementRow(
            user: user, entitlement: entitlement, source: source, active: row.integer("active") == 1, product: row.text("product"),
            expiresAt: row.integer("expires_at"), willRenew: row.integer("will_renew") == 1, lastEventTime: row.integer("last_event_time") ?? 0)
    }

    func save(_ row: EntitlementRow) throws {
        try tx.execute(
            """
            INSERT INTO payments_entitlements (user_id, entitlement, source, active, product, expires_at, will_renew, last_event_time, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user_id, entitlement, source) DO UPDATE SET active = excluded.active, product = excluded.product,
              expires_at = excluded.expires_at, will_renew = excluded.will_renew, last_event_time = excluded.last_event_time,
              updated_at = excluded.updated_at
            """,
            [
                .text(row.user), .text(row.entitlement), .text(row.source), .integer(row.active ? 1 : 0), row.product.map { .text($0) } ?? .null,
                row.expiresAt.map { .integer($0) } ?? .null, .integer(row.willRenew ? 1 : 0), .integer(row.lastEventTime), .integer(now),
            ])
    }

    /// Records a change in the history and publishes it.
    func record(_ change: String, _ row: EntitlementRow, reference: String?) throws {
        guard !quiet else { return }
        try tx.execute(
            "INSERT INTO payments_history (user_id, entitlement, change, source, product, reference, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(row.user), .text(row.entitlement), .text(change), .text(row.source), row.product.map { .text($0) } ?? .null,
                reference.map { .text($0) } ?? .null, .integer(now),
            ])
        try tx.append(
            EntitlementChanged(
                userId: row.user, entitlement: row.entitlement, change: change, source: row.source, product: row.product, active: row.active,
                expiresAt: row.expiresAt.map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 }),
            causedBy: cause)
    }

    /// Whether a row grants access at `now`.
    func grants(_ row: EntitlementRow) -> Bool { row.active && (row.expiresAt.map { $0 > now } ?? true) }

    /// Active until `expiresAt`: granted when it was not active, renewed when it was.
    func activate(
        _ user: String, _ entitlement: String, source: String, product: String?, expiresAt: Int64?, willRenew: Bool, time: Int64,
        reference: String?
    ) throws {
        let existing = try row(user, entitlement, source)
        if let existing, existing.lastEventTime > time { return }  // a late, older event
        // A subscription of the same store does not shorten what a lifetime product grants.
        if let existing, holdsForGood(existing, against: product), expiresAt != nil { return }
        let wasActive = existing.map(grants) ?? false
        let row = EntitlementRow(
            user: user, entitlement: entitlement, source: source, active: true, product: product ?? existing?.product, expiresAt: expiresAt,
            willRenew: willRenew, lastEventTime: time)
        try save(row)
        try record(wasActive ? "renewed" : "granted", row, reference: reference)
    }

    /// Renewal off; access stays until it expires.
    func cancelRenewal(_ user: String, _ entitlement: String, source: String, time: Int64, reference: String?) throws {
        guard var row = try row(user, entitlement, source), row.lastEventTime <= time, row.willRenew else { return }
        row.willRenew = false
        row.lastEventTime = time
        try save(row)
        try record("cancelled", row, reference: reference)
    }

    /// Whether `row` is an active lifetime hold by a product other than `product` (which then
    /// neither ends nor shortens it: a subscription ending, or refunded, is not the lifetime
    /// purchase ending).
    private func holdsForGood(_ row: EntitlementRow, against product: String?) -> Bool {
        guard let product, let held = row.product else { return false }
        return row.active && row.expiresAt == nil && held != product
    }

    /// Access from this source ends now (`expired` from a provider, `revoked` by an admin or a
    /// transfer); `product`: the product whose purchase ended, when the provider names one.
    func end(_ user: String, _ entitlement: String, source: String, product: String? = nil, time: Int64, change: String, reference: String?) throws {
        guard var row = try row(user, entitlement, source), row.lastEventTime <= time, !holdsForGood(row, against: product) else { return }
        let wasActive = row.active
        row.active = false
        row.willRenew = false
        row.lastEventTime = time
        try save(row)
        if wasActive { try record(change, row, reference: reference) }
    }
}
