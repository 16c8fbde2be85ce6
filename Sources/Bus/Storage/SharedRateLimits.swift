// SPDX-License-Identifier: Apache-2.0
import BusCore
import Runtime

/// One deployment's rate limits, kept by every instance of it (several appd instances on one
/// PostgreSQL): each instance decides every call from its own buckets in memory, as alone, and
/// every `interval` settles what it took with the deployment's bucket of each key in
/// `appd_rate_buckets` — one statement per limit — taking back the balance all instances left.
///
/// The bound this gives (docs/postgres.md, "Limits across instances"): over any stretch of time
/// a key gets at most its budget (`burst` + the rate over the stretch) plus a slack of
/// (N − 1) × `burst` + N × the rate over one `interval`, with N instances serving it at once —
/// what they can take before they next settle. What exceeds the budget is owed: the shared
/// balance goes below zero and every instance refuses the key until it has refilled, so over
/// time the rate holds exactly. If the database cannot be reached, each instance goes on with
/// its own buckets (each still enforces the whole limit on its own) and settles what it owes
/// once it can.
public final class SharedRateLimits: Service {
    public var name: String { "shared-rate-limits" }
    private let database: any Database
    private let limits: [(name: String, limiter: RateLimiter)]
    private let interval: Duration
    private let logger: Logger

    /// `limits`: each limiter by the name its buckets are kept under (one per limit).
    public init(database: any Database, limits: [(name: String, limiter: RateLimiter)], interval: Duration, logger: Logger) {
        self.database = database
        self.limits = limits.filter { $0.limiter.perMinute > 0 }
        self.interval = interval
        self.logger = logger
    }

    /// Stops as soon as the daemon shuts down (what is owed then is dropped with the buckets).
    public func run() async throws {
        try await cancelOnGracefulShutdown { try await self.work() }
    }

    private func work() async throws {
        var failing = false
        var round = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            do {
                try await settleAll(prune: round % 60 == 0)
                if failing { logger.notice("rate limits are shared across instances again") }
                failing = false
            } catch {
                if !failing {
                    logger.warning("cannot settle rate limits with the other instances; each limits on its own meanwhile", metadata: ["error": "\(error)"])
                }
                failing = true
            }
            round += 1
        }
    }

    /// One round: each limit's counts to the database and the balances back; every 60th round
    /// also forgets buckets that have refilled (as good as absent).
    func settleAll(prune: Bool = false) async throws {
        for (name, limiter) in limits {
            let spent = limiter.collectSpent()
            guard !spent.isEmpty || prune else { continue }
            let burst = Double(limiter.burst)
            let perSecond = Double(limiter.perMinute) / 60
            do {
                let balances = try await database.write { tx in
                    if prune { try Self.prune(tx, name: name, burst: burst, perSecond: perSecond) }
                    return try Self.settle(tx, name: name, spent: spent, burst: burst, perSecond: perSecond)
                }
                limiter.settle(balances)
            } catch {
                limiter.restore(spent)
                throw error
            }
        }
    }

    /// The deployment's buckets, one row per limit and key: the balance when last settled (it
    /// may be below zero: taken beyond the budget, owed) and when, by the server's clock.
    public static let schema = """
        CREATE TABLE IF NOT EXISTS appd_rate_buckets (
          name TEXT NOT NULL,
          key TEXT NOT NULL,
          tokens DOUBLE PRECISION NOT NULL,
          updated_at TIMESTAMPTZ NOT NULL,
          PRIMARY KEY (name, key)
        );
        """

    /// Each key's bucket refilled for the time since it was settled (at most `burst`), less
    /// what was taken; a new key's starts full. Returns every key's balance.
    static func settle(_ tx: any Transaction, name: String, spent: [String: Int], burst: Double, perSecond: Double) throws -> [String: Double] {
        var balances: [String: Double] = [:]
        let entries = Array(spent)
        var start = 0
        while start < entries.count {
            let chunk = entries[start..<min(start + 1000, entries.count)]
            // A new row's `tokens` is `burst - taken`, so on conflict `burst - EXCLUDED.tokens`
            // is what was taken.
            let rows = try tx.query(
                """
                INSERT INTO appd_rate_buckets AS b (name, key, tokens, updated_at)
                SELECT ?, u.k, ?::float8 - u.s, clock_timestamp() FROM unnest(?::text[], ?::float8[]) AS u(k, s)
                ON CONFLICT (name, key) DO UPDATE SET
                  tokens = LEAST(?::float8, b.tokens + ?::float8 * EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at)::float8) - (?::float8 - EXCLUDED.tokens),
                  updated_at = clock_timestamp()
                RETURNING key, tokens
                """,
                [
                    .text(name), .real(burst), .text(arrayLiteral(chunk.map(\.key))), .text("{" + chunk.map { String($0.value) }.joined(separator: ",") + "}"),
                    .real(burst), .real(perSecond), .real(burst),
                ])
            for row in rows {
                if let key = row.text("key"), let tokens = row.real("tokens") { balances[key] = tokens }
            }
            start += chunk.count
        }
        return balances
    }

    /// Forgets the buckets of `name` that have refilled since they were settled.
    static func prune(_ tx: any Transaction, name: String, burst: Double, perSecond: Double) throws {
        try tx.execute(
            "DELETE FROM appd_rate_buckets WHERE name = ? AND tokens + ?::float8 * EXTRACT(EPOCH FROM clock_timestamp() - updated_at)::float8 >= ?::float8",
            [.text(name), .real(perSecond), .real(burst)])
    }

    /// A PostgreSQL array literal of `texts`, each quoted.
    static func arrayLiteral(_ texts: [String]) -> String {
        "{" + texts.map { "\"" + $0.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\"" }.joined(separator: ",") + "}"
    }
}
