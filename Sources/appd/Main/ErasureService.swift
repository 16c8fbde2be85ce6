// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage
import Synchronization

/// After an account is deleted, and every plugin has erased its part (they do it as they
/// consume `auth.accountDeleted`, within moments), makes the erased bytes unreadable in the
/// database's files too (`Database.reclaimErased`): once no deletion has come for `settle`, so
/// a sweep of a thousand guests costs one reclaim (security review 2, finding 11).
struct ErasureService: Service {
    let bus: EventBus
    let database: any Database
    let settle: Duration
    let logger: Logger
    var name: String { "erasure" }

    func run() async throws {
        try await cancelOnGracefulShutdown { try await self.work() }
    }

    private func work() async throws {
        let subscription = try bus.subscribe(AccountDeleted.topic, options: SubscriptionOptions(capacity: 64, overflow: .dropOldest))
        defer { subscription.cancel() }
        let pending = LastDeletion()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await _ in subscription { pending.time.withLock { $0 = .now } }
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: min(settle, .seconds(1)))
                    let due = pending.time.withLock { last -> Bool in
                        guard let at = last, ContinuousClock.now - at >= settle else { return false }
                        last = nil
                        return true
                    }
                    guard due else { continue }
                    do {
                        try await database.reclaimErased()
                        logger.info("erased accounts' freed pages overwritten and the write-ahead log truncated")
                    } catch {
                        // Tried again after the next deletion; the log says why it could not now.
                        logger.warning("could not reclaim erased data", metadata: ["error": "\(error)"])
                    }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// When the latest deletion not yet reclaimed came (nil: none), shared by the two loops.
private final class LastDeletion: Sendable {
    let time = Mutex<ContinuousClock.Instant?>(nil)
}
