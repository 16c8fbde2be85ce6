// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// The accounts a provider event concerns, resolved before its transaction.
struct ResolvedAccounts: Sendable, Equatable {
    /// The account the event is about (nil: not yet known; the event is kept unapplied).
    var subject: String?
    /// TRANSFER: the accounts that lose and gain the entitlements.
    var from: [String] = []
    var to: [String] = []
}

/// The payments tables: stored provider events, entitlements, their history, admin grants,
/// meters and Stripe customers. Each operation is one transaction; events are appended in it.
struct PaymentsRepository: Sendable {
    let database: any Database

    // MARK: Provider events

    /// Stores and applies one verified event in one transaction. The primary key on
    /// (provider, event id) makes a second delivery — sequential or concurrent — a no-op. A
    /// Stripe customer or an App Store purchase is bound to the account the event names, and
    /// names it for the events that do not (`payments_customers`).
    /// `exclusive`: a purchase already bound to another account is refused (`ForeignTransaction`)
    /// instead of moving to this one (an app's own submission, which the App Store did not name).
    func ingest(
        _ event: ProviderEvent, body: String, accounts: ResolvedAccounts, exclusive: Bool = false, now: Int64, causedBy cause: (any Cause)?
    ) async throws -> Ingested {
        try await database.write { tx in
            // Checked first: the same signed purchase submitted again by another account is
            // refused, not answered as a duplicate.
            if exclusive, let original = event.subject.customerID, let user = accounts.subject,
                let owner = try tx.query(
                    "SELECT user_id FROM payments_customers WHERE provider = ? AND customer_id = ?", [.text(event.provider), .text(original)]
                ).first?.text("user_id"), owner != user
            {
                throw PaymentsError.foreignTransaction(reason: "this purchase was submitted by another account")
            }
            let inserted = try tx.execute(
                "INSERT INTO payments_events (provider, event_id, type, event_time, received_at, body) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(event.provider), .text(event.id), .text(event.type), .integer(event.time), .integer(now), .text(body)])
            guard inserted == 1 else { return Ingested(eventId: event.id, duplicate: true) }
            var subject = accounts.subject
            if let customer = event.subject.customerID {
                if let user = subject {
                    try tx.execute(
                        "INSERT INTO payments_customers (provider, customer_id, user_id) VALUES (?, ?, ?) ON CONFLICT (provider, customer_id) DO UPDATE SET user_id = "
                            + "excluded.user_id",
                        [.text(event.provider), .text(customer), .text(user)])
                } else {
                    subject = try tx.query(
                        "SELECT user_id FROM payments_customers WHERE provider = ? AND customer_id = ?", [.text(event.provider), .text(customer)]
                    ).first?.text("user_id")
                }
            }
            var links: [(String, String)] = subject.map { [($0, "subject")] } ?? []
            links += accounts.from.map { ($0, "from") } + accounts.to.map { ($0, "to") }
            for (user, role) in links {
                try tx.execute(
                    "INSERT INTO payments_event_users (provider, event_id, user_id, role) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [.text(event.provider), .text(event.id), .text(user), .text(role)])
            }
            let store = EntitlementStore(tx: tx, now: now, cause: cause)
            for (user, role) in links { try Self.apply(event, to: user, role: role, store) }
            return Ingested(eventId: event.id, duplicate: false)
        }
    }

    /// The App Store purchases (original transaction ids) bound to the account, at most 100.
    func appStorePurchases(user: String) async throws -> [String] {
        try await storePurchases(user: user, provider: "appstore")
    }

    /// The store purchases (App Store original transaction ids, Google Play purchase tokens)
    /// bound to the account, at most 100.
    func storePurchases(user: String, provider: String) async throws -> [String] {
        try await database.read { tx in
            try tx.query(
                "SELECT customer_id FROM payments_customers WHERE provider = ? AND user_id = ? ORDER BY customer_id LIMIT 100", [.text(provider), .text(user)]
            ).compactMap { $0.text("customer_id") }
        }
    }

    /// The account a store purchase is bound to, if any.
    func storePurchaseOwner(provider: String, id: String) async throws -> String? {
        try await database.read { tx in
            try tx.query("SELECT user_id FROM payments_customers WHERE provider = ? AND customer_id = ?", [.text(provider), .text(id)]).first?.text("user_id")
        }
    }

    /// The latest stored Google Play record of the purchase whose token has `tag`.
    func googlePlayRecord(tag: String) async throws -> GooglePlayRecord? {
        try await database.read { tx in
            let body = try tx.query(
                "SELECT body FROM payments_events WHERE provider = 'googleplay' AND event_id LIKE ? ORDER BY event_time DESC LIMIT 1", [.text(tag + ":%")]
            ).first?.text("body")
            return body.flatMap { try? GooglePlayRecord(json: Array($0.utf8)) }
        }
    }

    /// What one event does to one account.
    static func apply(_ event: ProviderEvent, to user: String, role: String, _ store: EntitlementStore) throws {
        let source = event.provider, time = event.time, ref = event.id
        for action in event.actions {
            switch (action, role) {
            case (.activate(let entitlement, let product, let expiresAt, let willRenew), "subject"):
                try store.activate(user, entitlement, source: source, product: product, expiresAt: expiresAt, willRenew: willRenew, time: time, reference: ref)
            case (.cancelRenewal(let entitlement, _), "subject"):
                try store.cancelRenewal(user, entitlement, source: source, time: time, reference: ref)
            case (.expire(let entitlement, let product), "subject"):
                try store.end(user, entitlement, source: source, product: product, time: time, change: "expired", reference: ref)
            case (.revoke(let entitlement, let product), "subject"):
                try store.end(user, entitlement, source: source, product: product, time: time, change: "revoked", reference: ref)
            case (.purchaseFailed(let product, let reason), "subject"):
                guard !store.quiet else { continue }
                try store.tx.append(PurchaseFailed(userId: user, provider: source, product: product, reason: reason), causedBy: store.cause)
            case (.transfer(_, _, let entitlements, _, _), "from"):
                for entitlement in entitlements {
                    try store.end(user, entitlement, source: source, time: time, change: "revoked", reference: ref)
                }
            case (.transfer(_, _, let entitlements, let product, let expiresAt), "to"), (.transfer(_, _, let entitlements, let product, let expiresAt), "subject"):
                for entitlement in entitlements {
                    try store.activate(user, entitlement, source: source, product: product, expiresAt: expiresAt, willRenew: true, time: time, reference: ref)
                }
            default:
                continue
            }
        }
    }

    // MARK: Admin grants

    func grant(user: String, entitlement: String, expiresAt: Int64?, reason: String, actor: String, now: Int64, causedBy cause: (any Cause)?) async throws {
        try await database.write { tx in
            try tx.execute(
                "INSERT INTO payments_grants (user_id, entitlement, action, expires_at, reason, actor, at) VALUES (?, ?, 'grant', ?, ?, ?, ?)",
                [.text(user), .text(entitlement), expiresAt.map { .integer($0) } ?? .null, .text(reason), .text(actor), .integer(now)])
            try EntitlementStore(tx: tx, now: now, cause: cause).activate(
                user, entitlement, source: "admin", product: nil, expiresAt: expiresAt, willRenew: false, time: now, reference: reason)
        }
    }

    /// Ends the entitlement from every source.
    /// Ends the administrator's grant of `entitlement` — and, with `includePaid`, every
    /// provider's too — recorded in the audit trail; returns the sources that were granting it
    /// and no longer do.
    func revoke(
        user: String, entitlement: String, reason: String, actor: String, includePaid: Bool, now: Int64, causedBy cause: (any Cause)?
    )
        async throws -> [String]
    {
        try await database.write { tx in
            try tx.execute(
                """
                INSERT INTO payments_grants (user_id, entitlement, action, expires_at, reason, actor, at, scope) VALUES (?, ?, 'revoke', NULL, ?, ?, ?, ?)
                """,
                [.text(user), .text(entitlement), .text(reason), .text(actor), .integer(now), .text(includePaid ? "all" : "admin")])
            let store = EntitlementStore(tx: tx, now: now, cause: cause)
            var ended: [String] = []
            for row in try store.rows(user) where row.entitlement == entitlement && (includePaid || row.source == "admin") {
                if store.grants(row) { ended.append(row.source) }
                try store.end(user, entitlement, source: row.source, time: max(now, row.lastEventTime), change: "revoked", reference: reason)
            }
            return ended.sorted()
        }
    }

    // MARK: Restore

    /// Recomputes a user's entitlements from their stored provider events and admin grants,
    /// in event-time order, and records the net changes.
    func restore(user: String, decode: @escaping @Sendable (String, String) -> ProviderEvent?, now: Int64) async throws {
        try await database.write { tx in
            let before = try EntitlementStore(tx: tx, now: now).rows(user)
            try tx.execute("DELETE FROM payments_entitlements WHERE user_id = ?", [.text(user)])
            enum Step { case event(ProviderEvent, String), grant(Row) }
            var steps: [(Int64, Step)] = []
            for row in try tx.query(
                """
                SELECT e.provider, e.body, u.role FROM payments_event_users u
                JOIN payments_events e ON e.provider = u.provider AND e.event_id = u.event_id WHERE u.user_id = ?
                """, [.text(user)])
            {
                guard let provider = row.text("provider"), let body = row.text("body"), let role = row.text("role"),
                    let event = decode(provider, body)
                else { continue }
                steps.append((event.time, .event(event, role)))
            }
            for row in try tx.query("SELECT * FROM payments_grants WHERE user_id = ? ORDER BY seq", [.text(user)]) {
                steps.append((row.integer("at") ?? 0, .grant(row)))
            }
            var quiet = EntitlementStore(tx: tx, now: now)
            quiet.quiet = true
            for (time, step) in steps.sorted(by: { $0.0 < $1.0 }) {
                switch step {
                case .event(let event, let role):
                    try Self.apply(event, to: user, role: role, quiet)
                case .grant(let row):
                    guard let entitlement = row.text("entitlement"), let reason = row.text("reason") else { continue }
                    if row.text("action") == "grant" {
                        try quiet.activate(user, entitlement, source: "admin", product: nil, expiresAt: row.integer("expires_at"), willRenew: false, time: time, reference: reason)
                    } else {
                        let everySource = row.text("scope") != "admin"
                        for existing in try quiet.rows(user) where existing.entitlement == entitlement && (everySource || existing.source == "admin") {
                            try quiet.end(user, entitlement, source: existing.source, time: max(time, existing.lastEventTime), change: "revoked", reference: reason)
                        }
                    }
                }
            }
            // Report only what changed.
            let loud = EntitlementStore(tx: tx, now: now)
            let after = try loud.rows(user)
            for row in after {
                let old = before.first { $0.entitlement == row.entitlement && $0.source == row.source }
                if (old.map(loud.grants) ?? false) != loud.grants(row) { try loud.record(loud.grants(row) ? "granted" : "expired", row, reference: "restore") }
            }
            for old in before where loud.grants(old) && !after.contains(where: { $0.entitlement == old.entitlement && $0.source == old.source }) {
                var gone = old
                gone.active = false
                try loud.record("expired", gone, reference: "restore")
            }
        }
    }

    // MARK: Reads

    func entitlements(user: String, now: Int64) async throws -> [Entitlement] {
        try await database.read { tx in
            let store = EntitlementStore(tx: tx, now: now)
            let rows = try store.rows(user)
            let history = try tx.query("SELECT * FROM payments_history WHERE user_id = ? ORDER BY seq", [.text(user)])
            return Dictionary(grouping: rows, by: \.entitlement).keys.sorted().map { name in
                let mine = rows.filter { $0.entitlement == name }
                // The row that grants the longest access speaks for the entitlement.
                let best = mine.filter(store.grants).max { ($0.expiresAt ?? .max) < ($1.expiresAt ?? .max) } ?? mine.max { $0.lastEventTime < $1.lastEventTime }
                return Entitlement(
                    name: name, active: best.map(store.grants) ?? false, source: best?.source, product: best?.product,
                    expiresAt: best?.expiresAt.map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 }, willRenew: best?.willRenew ?? false,
                    history: history.filter { $0.text("entitlement") == name }.suffix(50).map { row in
                        EntitlementChange(
                            change: row.text("change") ?? "", source: row.text("source") ?? "", product: row.text("product"), reference: row.text("reference"),
                            at: WallTime(nanosecondsSinceEpoch: row.integer("at") ?? 0).rfc3339)
                    })
            }
        }
    }

    /// Whether the user holds the entitlement now (the paywall asks on every call).
    func isEntitled(user: String, entitlement: String, now: Int64) async throws -> Bool {
        try await database.read { tx in
            try !tx.query(
                """
                SELECT 1 FROM payments_entitlements WHERE user_id = ? AND entitlement = ? AND active = 1
                AND (expires_at IS NULL OR expires_at > ?) LIMIT 1
                """, [.text(user), .text(entitlement), .integer(now)]
            ).isEmpty
        }
    }

    // MARK: Meters

    /// Takes one use of the meter in the period starting at `periodStart` if fewer than
    /// `limit` are used; returns whether it did and how many are used. One transaction: two
    /// concurrent calls with one use left cannot both pass.
    func consume(user: String, meter: String, periodStart: Int64, limit: Int) async throws -> (taken: Bool, used: Int) {
        try await database.write { tx in
            try Self.rollOver(tx, user: user, meter: meter, periodStart: periodStart)
            let taken =
                try tx.execute(
                    "UPDATE payments_meters SET used = used + 1 WHERE user_id = ? AND meter = ? AND used < ?",
                    [.text(user), .text(meter), .integer(Int64(limit))]) == 1
            let used = try tx.query("SELECT used FROM payments_meters WHERE user_id = ? AND meter = ?", [.text(user), .text(meter)]).first?.integer("used") ?? 0
            return (taken, Int(used))
        }
    }

    /// Gives back a use taken by a command that then failed (same period only).
    func refund(user: String, meter: String, periodStart: Int64) async throws {
        try await database.write { tx in
            _ = try tx.execute(
                "UPDATE payments_meters SET used = used - 1 WHERE user_id = ? AND meter = ? AND period_start = ? AND used > 0",
                [.text(user), .text(meter), .integer(periodStart)])
        }
    }

    func used(user: String, meter: String, periodStart: Int64) async throws -> Int {
        try await database.read { tx in
            let row = try tx.query("SELECT used, period_start FROM payments_meters WHERE user_id = ? AND meter = ?", [.text(user), .text(meter)]).first
            guard let row, row.integer("period_start") == periodStart else { return 0 }
            return Int(row.integer("used") ?? 0)
        }
    }

    private static func rollOver(_ tx: any Transaction, user: String, meter: String, periodStart: Int64) throws {
        try tx.execute(
            """
            INSERT INTO payments_meters (user_id, meter, period_start, used) VALUES (?, ?, ?, 0)
            ON CONFLICT (user_id, meter) DO UPDATE SET period_start = excluded.period_start, used = 0
            WHERE payments_meters.period_start < excluded.period_start
            """, [.text(user), .text(meter), .integer(periodStart)])
    }

    // MARK: Expiry and erasure

    /// Turns off every entitlement whose time has come; returns how many, and the next expiry.
    func expireDue(now: Int64) async throws -> (expired: Int, next: Int64?) {
        try await database.write { tx in
            let store = EntitlementStore(tx: tx, now: now)
            let due = try tx.query(
                "SELECT * FROM payments_entitlements WHERE active = 1 AND expires_at IS NOT NULL AND expires_at <= ? LIMIT 500", [.integer(now)]
            ).compactMap(EntitlementStore.decode)
            for var row in due {
                row.active = false
                row.willRenew = false
                try store.save(row)
                try store.record("expired", row, reference: "expiresAt")
            }
            let next = try tx.query("SELECT MIN(expires_at) AS next FROM payments_entitlements WHERE active = 1 AND expires_at IS NOT NULL").first?.integer("next")
            return (due.count, next)
        }
    }

    /// Erases a deleted account's payment data. Stored provider events and admin grants stay
    /// (audit and bookkeeping need them); their link to the account is removed.
    func eraseUser(_ user: String) async throws {
        try await database.write { tx in
            for table in ["payments_entitlements", "payments_history", "payments_meters", "payments_customers", "payments_event_users", "payments_appstore_tokens"] {
                try tx.execute("DELETE FROM \(table) WHERE user_id = ?", [.text(user)])
            }
        }
    }
}
