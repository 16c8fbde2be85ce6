// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization
import Runtime
import Storage

/// Prunes the event log by age and by count, at start and then periodically. The limits can
/// change while it runs (configuration reload).
public final class EventLogRetention: Service {
    public struct Limits: Sendable, Equatable {
        public var maxAge: Duration?
        public var maxCount: Int?
        public init(maxAge: Duration?, maxCount: Int?) {
            self.maxAge = maxAge
            self.maxCount = maxCount
        }
    }

    public var name: String { "event-log-retention" }
    private let log: EventLog
    private let interval: Duration
    private let limits: Mutex<Limits>
    private let logger: Logger

    public init(log: EventLog, limits: Limits, interval: Duration = .seconds(3600), logger: Logger = Logger(label: "appd.storage")) {
        self.log = log
        self.limits = Mutex(limits)
        self.interval = interval
        self.logger = logger
    }

    public func update(_ new: Limits) { limits.withLock { $0 = new } }

    public var current: Limits { limits.withLock { $0 } }

    /// Stops as soon as the daemon shuts down: nothing it does needs draining.
    public func run() async throws {
        try await cancelOnGracefulShutdown { try await self.work() }
    }

    private func work() async throws {
        while !Task.isCancelled {
            let now = current
            if now.maxAge != nil || now.maxCount != nil {
                do {
                    let removed = try await log.prune(maxAge: now.maxAge, maxCount: now.maxCount)
                    if removed > 0 { logger.info("pruned the event log", metadata: ["events.removed": "\(removed)"]) }
                } catch {
                    logger.warning("could not prune the event log; will retry", metadata: ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: interval)
        }
    }
}
