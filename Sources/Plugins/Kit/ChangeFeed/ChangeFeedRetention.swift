import Bus
import Storage

/// Prunes a plugin's change-feed tombstones older than the retention (90 days by default), at
/// start and then every `interval`; a client away longer must pull again from the start.
public struct ChangeFeedRetention: Service {
    public let name: String
    let feed: ChangeFeed
    let database: any Database
    let keep: Duration
    let interval: Duration
    let logger: Logger

    public init(feed: ChangeFeed, database: any Database, keep: Duration, interval: Duration = .seconds(3600), logger: Logger) {
        self.name = feed.table + ".tombstones"
        self.feed = feed
        self.database = database
        self.keep = keep
        self.interval = interval
        self.logger = logger
    }

    /// Stops as soon as the daemon shuts down: nothing it does needs draining.
    public func run() async throws {
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let removed = try await feed.prune(database, olderThan: keep)
                    if removed > 0 { logger.info("pruned change-feed tombstones", metadata: ["feed": "\(feed.table)", "tombstones.removed": "\(removed)"]) }
                } catch {
                    logger.warning("could not prune change-feed tombstones; will retry", metadata: ["feed": "\(feed.table)", "error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
