// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// Turns lapsed entitlements off on time and publishes each change: it sleeps until the
/// next expiry (at most `maxSleep`, so a grant made meanwhile is picked up), then expires
/// what is due. Supervised by the plugin host (restarted with backoff if it fails).
struct ExpiryService: Service {
    let repository: PaymentsRepository
    let clock: @Sendable () -> WallTime
    let logger: Logger
    var maxSleep: Duration = .seconds(30)
    var name: String { "payments.expiry" }

    /// Stops as soon as the daemon shuts down: nothing it does needs draining.
    func run() async throws {
        try await cancelOnGracefulShutdown { try await self.work() }
    }

    private func work() async throws {
        while !Task.isCancelled {
            let next = try await expireDue()
            var wait = maxSleep
            if let next {
                let until = Duration.nanoseconds(max(0, next - clock().nanosecondsSinceEpoch))
                wait = min(wait, until + .milliseconds(5))
            }
            try await Task.sleep(for: wait)
        }
    }

    /// Expires everything due now; returns the next expiry time, if any.
    @discardableResult
    func expireDue() async throws -> Int64? {
        var result = try await repository.expireDue(now: clock().nanosecondsSinceEpoch)
        while result.expired == 500 {  // a backlog after downtime: keep going in batches
            result = try await repository.expireDue(now: clock().nanosecondsSinceEpoch)
        }
        if result.expired > 0 { logger.info("entitlements expired", metadata: ["count": "\(result.expired)"]) }
        return result.next
    }
}
