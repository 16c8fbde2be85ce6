// SPDX-License-Identifier: Apache-2.0
import BusCore
import Runtime
import Synchronization

/// Scheduled backups: one every `interval`, keeping the newest `keep`. A failure is logged,
/// counted (`appd_backups_total{outcome="failed"}`) and shown by `appctl status`; the next
/// one is tried at the next interval.
public final class BackupService: Service {
    public struct Outcome: Sendable, Equatable {
        /// The newest backup made (by the schedule or by hand), and when.
        public var last: String?
        public var lastAt: String?
        /// Why the last attempt failed, while it stays the last one.
        public var lastError: String?
        public var failures = 0
    }

    public var name: String { "backups" }
    private let backups: Backups
    private let interval: Duration?
    private let keep: Int
    private let logger: Logger
    private let state = Mutex(Outcome())
    /// One backup at a time, scheduled or asked for.
    private let running = Mutex(false)

    public init(backups: Backups, interval: Duration?, keep: Int, logger: Logger) {
        self.backups = backups
        self.interval = interval
        self.keep = max(1, keep)
        self.logger = logger
        // After a restart, the newest backup on disk is the last one made (a status that forgot
        // it would say there is none).
        if let newest = backups.newestOnDisk() {
            state.withLock {
                $0.last = newest.path; $0.lastAt = newest.createdAt
            }
        }
    }

    public var outcome: Outcome { state.withLock { $0 } }

    /// Makes a backup now (also what `appctl backup create` calls); prunes to `keep` when it
    /// is a scheduled one.
    public func backUp(scheduled: Bool) async throws -> (path: String, manifest: BackupManifest) {
        guard
            running.withLock({ busy in
                defer { busy = true }; return !busy
            })
        else {
            throw BackupProblem("a backup is being made; try again when it is done")
        }
        defer { running.withLock { $0 = false } }
        do {
            let made = try await backups.create()
            if scheduled { backups.prune(keep: keep) }
            state.withLock {
                $0.last = made.path; $0.lastAt = made.manifest.createdAt; $0.lastError = nil
            }
            Metrics.shared.increment("appd_backups_total", help: "Backups made, by outcome.", labels: [("outcome", "ok")])
            logger.notice("backup made", metadata: ["path": made.path, "last.seq": "\(made.manifest.lastSequence)"])
            if let skipped = made.manifest.skipped {
                logger.warning(
                    "backup left out what is not a plugin's regular file (listed in its manifest.json)",
                    metadata: ["path": made.path, "skipped": "\(skipped.count)", "first": "\(skipped[0])"])
            }
            return made
        } catch {
            state.withLock {
                $0.lastError = "\(error)"; $0.failures += 1
            }
            Metrics.shared.increment("appd_backups_total", help: "Backups made, by outcome.", labels: [("outcome", "failed")])
            logger.error("backup failed", metadata: ["error": "\(error)", "directory": backups.directory])
            throw error
        }
    }

    public func run() async throws {
        // Unscheduled it has nothing to do but must not end (a service that returns stops appd).
        guard let interval else { return await gracefulShutdown() }
        try await cancelOnGracefulShutdown { [self] in
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                _ = try? await backUp(scheduled: true)
            }
        }
    }
}
