// SPDX-License-Identifier: Apache-2.0
import BusCore
import Testing
import TestSupport
@testable import Storage

extension PostgresTests {
    /// One account's calls spread over two instances of a deployment: together they stay within
    /// the limit plus the slack `SharedRateLimits` states — where each alone would allow the whole
    /// limit again — and still get about the whole budget.
    @Suite struct SharedLimits {
        @Test func anAccountDrivingTwoInstancesStaysWithinItsBudgetPlusTheSlack() async throws {
            let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
            var options = PostgresDatabase.Options()
            options.readers = 1
            let (perMinute, burst, interval) = (600, 20, Duration.milliseconds(100))
            var instances: [(RateLimiter, SharedRateLimits, PostgresDatabase)] = []
            for _ in 0..<2 {
                let database = try await PostgresDatabase.open(url: url, outbox: nil, options: options)
                let limiter = RateLimiter(perMinute: perMinute, burst: burst, trackedClients: 100)
                instances.append((limiter, SharedRateLimits(database: database, limits: [("accounts", limiter)], interval: interval, logger: Logger(label: "test")), database))
            }
            let start = ContinuousClock.now
            var allowed = 0
            var settled = start
            while start.duration(to: .now) < .seconds(3) {
                for (limiter, _, _) in instances {
                    for _ in 0..<5 where limiter.take("ada") == nil { allowed += 1 }
                }
                if settled.duration(to: .now) >= interval {
                    for (_, shared, _) in instances { try await shared.settleAll() }
                    settled = .now
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            let seconds = Double(start.duration(to: .now).components.seconds) + Double(start.duration(to: .now).components.attoseconds) / 1e18
            let rate = Double(perMinute) / 60
            let budget = Double(burst) + rate * seconds
            let slack = Double(burst) + 2 * rate * 0.1 + 2 * rate * 0.05  // (N−1)·burst + N·rate·interval, and a settle's own time
            #expect(Double(allowed) <= budget + slack, "allowed \(allowed) over \(seconds) s; budget \(budget), slack \(slack)")
            #expect(Double(allowed) >= budget * 0.8, "allowed \(allowed) over \(seconds) s; budget \(budget)")
            // The deployment's balance: what both took, owed if beyond the budget.
            let row = try await instances[0].2.read { tx in try tx.query("SELECT tokens FROM appd_rate_buckets WHERE name = 'accounts' AND key = 'ada'") }.first
            #expect(row?.real("tokens") != nil)
            for (_, _, database) in instances { await database.close() }
        }

        @Test func keysAreQuotedAndABucketThatRefilledIsForgotten() async throws {
            let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
            var options = PostgresDatabase.Options()
            options.readers = 1
            let database = try await PostgresDatabase.open(url: url, outbox: nil, options: options)
            let keys = ["a\"b", "c\\d", "e,f", "{g}", "h i", ""]
            let balances = try await database.write { tx in
                try SharedRateLimits.settle(tx, name: "t", spent: Dictionary(uniqueKeysWithValues: keys.map { ($0, 3) }), burst: 10, perSecond: 1000)
            }
            #expect(Set(balances.keys) == Set(keys) && balances.values.allSatisfy { $0 == 7 })
            let owing = try await database.write { tx in try SharedRateLimits.settle(tx, name: "slow", spent: ["a\"b": 12], burst: 10, perSecond: 0.001) }
            #expect(owing["a\"b"] == -2, "taken beyond the balance is owed")
            let again = try await database.write { tx in try SharedRateLimits.settle(tx, name: "slow", spent: ["a\"b": 1], burst: 10, perSecond: 0.001) }
            #expect(again["a\"b"].map { $0 < -2.9 && $0 > -3.1 } == true, "\(again)")
            try await Task.sleep(for: .milliseconds(20))
            try await database.write { tx in
                try SharedRateLimits.prune(tx, name: "t", burst: 10, perSecond: 1000)
                try SharedRateLimits.prune(tx, name: "slow", burst: 10, perSecond: 0.001)
            }
            let left = try await database.read { tx in try tx.query("SELECT name, key FROM appd_rate_buckets") }.compactMap { $0.text("name") }
            #expect(left == ["slow"], "the refilled buckets went; the owing one stays")
            await database.close()
        }
    }
}
