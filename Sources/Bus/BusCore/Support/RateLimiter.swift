// SPDX-License-Identifier: Apache-2.0

/// Token buckets by key — a client network for the HTTP API's abuse-prone methods, an account
/// for the limits gate: `perMinute` tokens refilled evenly, up to `burst`, in a bounded table
/// that forgets the least recently seen keys first — a tenth of the table at once, so a flood
/// of new keys costs one sort per tenth of the table, not a scan of it per call.
///
/// Several instances of one deployment share each limit (`SharedRateLimits`): every bucket
/// counts the tokens taken since it was last settled, the counts go to the deployment's bucket
/// in the database, and the bucket takes the deployment's balance back (`settle`).
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
        /// Tokens taken since the counts were last collected (`collectSpent`).
        var spent: Int = 0
    }
    public let perMinute: Int
    public let burst: Int
    private let capacity: Int
    private let buckets = Locked<[String: Bucket]>([:])

    /// `perMinute` 0 turns the limit off; `burst` defaults to a minute's worth.
    public init(perMinute: Int, burst: Int? = nil, trackedClients: Int) {
        self.perMinute = perMinute
        self.burst = max(1, burst ?? perMinute)
        self.capacity = max(1, trackedClients)
    }

    /// Takes a token for `client`: nil when allowed, else the seconds to wait.
    public func take(_ client: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard perMinute > 0 else { return nil }
        let rate = Double(perMinute) / 60
        let burst = Double(self.burst)
        return buckets.withLock { table -> Int? in
            var bucket = table[client] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + rate * (now - bucket.updated).inSeconds)
            bucket.updated = now
            defer {
                if table[client] == nil && table.count >= capacity { Self.forgetOldest(in: &table, keeping: capacity - max(1, capacity / 10)) }
                table[client] = bucket
            }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            bucket.spent += 1
            return nil
        }
    }

    /// The tokens each key took since the last collection (and forgets them: the caller owes
    /// them to the shared bucket, or gives them back with `restore` when it cannot settle).
    public func collectSpent() -> [String: Int] {
        buckets.withLock { table in
            var spent: [String: Int] = [:]
            for (key, bucket) in table where bucket.spent > 0 {
                spent[key] = bucket.spent
                table[key]?.spent = 0
            }
            return spent
        }
    }

    /// Counts that could not be settled, owed again at the next collection.
    public func restore(_ spent: [String: Int]) {
        buckets.withLock { table in
            for (key, count) in spent { table[key]?.spent += count }
        }
    }

    /// Takes the deployment's balance of each key, as settled just now with what was collected:
    /// what was taken here since (not yet in the balance) is taken from it again.
    public func settle(_ balances: [String: Double], now: ContinuousClock.Instant = .now) {
        buckets.withLock { table in
            for (key, balance) in balances {
                let pending = table[key]?.spent ?? 0
                if table[key] == nil && table.count >= capacity { Self.forgetOldest(in: &table, keeping: capacity - max(1, capacity / 10)) }
                table[key] = Bucket(tokens: min(Double(burst), balance) - Double(pending), updated: now, spent: pending)
            }
        }
    }

    /// How many keys the table holds.
    public var tracked: Int { buckets.withLock { $0.count } }

    private static func forgetOldest(in table: inout [String: Bucket], keeping: Int) {
        let newest = table.sorted { $0.value.updated > $1.value.updated }.prefix(keeping)
        table = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }
}
