import Bus
import Storage

/// Prunes the stored outcomes of keyed calls older than the retention (24 h by default), at
/// start and then every `interval`. A retry after that is a new call.
public struct IdempotencyRetention: Service {
    public var name: String { "idempotency-retention" }
    let log: IdempotencyLog
    let keep: Duration
    let interval: Duration
    let logger: Logger

    public init(database: any Database, keep: Duration, interval: Duration = .seconds(600), logger: Logger = Logger(label: "appd.storage")) {
        self.log = IdempotencyLog(database: database)
        self.keep = keep
        self.interval = interval
        self.logger = logger
    }

    /// Stops as soon as the daemon shuts down: nothing it does needs draining.
    public func run() async throws {
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let removed = try await log.prune(olderThan: keep)
                    if removed > 0 { logger.debug("pruned idempotency keys", metadata: ["keys.removed": "\(removed)"]) }
                } catch {
                    logger.warning("could not prune idempotency keys; will retry", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
