// SPDX-License-Identifier: Apache-2.0
import Bus

/// A service that prunes something old at start and then every `interval` (kept idempotency
/// keys, change-feed tombstones): `prune` returns how many it removed; a failure is logged and
/// tried again at the next turn. Stops as soon as the daemon shuts down: nothing to drain.
public struct PeriodicPruning: Service {
    public let name: String
    let interval: Duration
    let logger: Logger
    let prune: @Sendable () async throws -> Int

    public init(name: String, interval: Duration, logger: Logger, prune: @escaping @Sendable () async throws -> Int) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.prune = prune
    }

    public func run() async throws {
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let removed = try await prune()
                    if removed > 0 { logger.info("pruned", metadata: ["what": "\(name)", "removed": "\(removed)"]) }
                } catch {
                    logger.warning("could not prune; will retry", metadata: ["what": "\(name)", "error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
