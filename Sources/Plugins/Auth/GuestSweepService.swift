// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// Deletes guest accounts not seen (signed in or refreshed) for `idle`, through the normal
/// erasure path: each plugin erases the guest's data on auth.accountDeleted. Runs whether or not
/// guests are allowed now (guests made while they were stay subject to it). Supervised by the
/// plugin host.
struct GuestSweepService: Service {
    let repository: AuthRepository
    let clock: @Sendable () -> WallTime
    let idle: Duration
    let interval: Duration
    let logger: Logger
    var name: String { "auth.guestSweep" }

    func run() async throws {
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                try await sweep()
                try await Task.sleep(for: interval)
            }
        }
    }

    /// Deletes every idle guest (in batches); returns how many.
    @discardableResult
    func sweep() async throws -> Int {
        var total = 0
        while true {
            let now = clock().nanosecondsSinceEpoch
            let deleted = try await repository.deleteIdleGuests(before: now - idle.nanoseconds, limit: 100, now: now)
            total += deleted
            if deleted < 100 { break }
        }
        if total > 0 { logger.info("idle guest accounts deleted", metadata: ["count": "\(total)"]) }
        return total
    }
}
