// SPDX-License-Identifier: Apache-2.0
import Bus
import Storage
import EventDelivery
#if canImport(Glibc)
import Glibc
#endif

/// SIGHUP: reads the configuration again (same file and flags), applies what can change while
/// running — log level, event retention — and logs what changed and what needs a restart.
/// An invalid new configuration is refused and the running one kept.
struct ReloadService: Service {
    let options: AppdOptions
    let running: AppdConfig
    let retention: EventLogRetention
    let logger: Logger
    var name: String { "reload" }

    /// Stops as soon as the daemon shuts down: nothing it does needs draining.
    func run() async throws {
        try await cancelOnGracefulShutdown { try await self.work() }
    }

    private func work() async throws {
        let (signals, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watch = try Signals.watch(SIGHUP) { continuation.yield() }
        defer { watch.cancel() }
        var current = running
        await withTaskCancellationHandler {
            for await _ in signals { current = reload(from: current) }
        } onCancel: {
            continuation.finish()
        }
    }

    /// Applies a reload; returns the configuration now in force.
    func reload(from old: AppdConfig) -> AppdConfig {
        let new: AppdConfig
        do {
            (new, _) = try ConfigLoader.load(flags: options.overrides, configFile: options.configFile)
        } catch {
            logger.error("reload refused; keeping the running configuration", metadata: ["error": "\(error)"])
            return old
        }
        var applied = old
        var changes: [String] = []
        if new.logLevel != old.logLevel {
            LoggingSystem.level = new.logLevel
            applied.logLevel = new.logLevel
            changes.append("logLevel \(old.logLevel) -> \(new.logLevel)")
        }
        if new.eventRetentionDays != old.eventRetentionDays || new.eventRetentionCount != old.eventRetentionCount {
            retention.update(.init(maxAge: new.eventRetentionDays.map { .seconds(Int64($0) * 86_400) }, maxCount: new.eventRetentionCount))
            applied.eventRetentionDays = new.eventRetentionDays
            applied.eventRetentionCount = new.eventRetentionCount
            changes.append("event retention")
        }
        var needsRestart: [String] = []
        if new.socket != old.socket { needsRestart.append("socket") }
        if new.dataDirectory != old.dataDirectory { needsRestart.append("dataDirectory") }
        if new.adminGroup != old.adminGroup { needsRestart.append("adminGroup") }
        if new.limits != old.limits { needsRestart.append("limits") }
        logger.notice(
            "configuration reloaded",
            metadata: [
                "applied": changes.isEmpty ? "nothing changed" : changes.joined(separator: ", "),
                "needs.restart": needsRestart.isEmpty ? "none" : needsRestart.joined(separator: ", "),
            ])
        return applied
    }
}
