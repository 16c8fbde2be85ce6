// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import PluginKit
import Storage
import ExternalPlugins

import Contracts

extension DaemonInterface {
    /// What the handlers need from the rest of the daemon.
    struct Context: Sendable {
        let startedAt: ContinuousClock.Instant
        let connections: @Sendable () -> Int
        let plugins: @Sendable () async -> [PluginStatus]
        let eventLog: EventLog
        let shutdown: @Sendable () async -> Void
        let external: ExternalPluginHost
        let paths: Paths
        let backups: @Sendable () -> BackupStatus
        let isAdmin: @Sendable (Caller) -> Bool
    }

    /// Serves `io.appd.Daemon` on `dispatcher`; `bus` (appd's event bus) gives its counters and presence.
    static func install(on dispatcher: VarlinkDispatcher, events bus: EventBus, context: Context) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        // The methods go to the bus the dispatcher routes to; `bus` is for events.
        let commands = dispatcher.bus
        try commands.answer(Ping.self) { _, _ in Empty() }
        try commands.register(Status.self) { _, envelope in
            let uptime = ContinuousClock.now - context.startedAt
            let lag = try await context.eventLog.consumerLag()
            return StatusReply(
                version: Version.current, pid: Int(getpid()),
                uptimeSeconds: Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18,
                connections: context.connections(), plugins: await context.plugins(), bus: bus.counters,
                eventLog: EventLogStatus(
                    lastSeq: lag.last, consumers: lag.consumers.map { Consumer(name: $0.name, position: $0.position, lag: $0.lag) }),
                paths: context.isAdmin(envelope.caller) ? context.paths : nil, backups: context.isAdmin(envelope.caller) ? context.backups() : nil)
        }
        try commands.register(Plugins.self) { _, _ in PluginsReply(plugins: await context.plugins()) }
        try commands.register(Presence.self) { command, _ in .init(streams: bus.sessionStreams.count(userID: command.userId)) }
        let external = context.external
        try commands.register(RestartPlugin.self) { command, _ in
            try await external.restart(command.name)
            return Empty()
        }
        try commands.register(EnablePlugin.self) { command, _ in
            try await external.enable(command.name)
            return Empty()
        }
        try commands.register(DisablePlugin.self) { command, _ in
            try await external.disable(command.name)
            return Empty()
        }
        try commands.register(RescanPlugins.self) { _, _ in
            let outcome = await external.rescan()
            return .init(
                added: outcome.added, removed: outcome.removed, changed: outcome.changed,
                directories: outcome.directories.map { .init(path: $0.path, exists: $0.exists, folders: $0.folders) },
                skipped: outcome.skipped.map { .init(folder: $0.folder, reason: $0.reason) })
        }
        try commands.register(Shutdown.self) { _, envelope in
            envelope.logger.notice("shutdown requested over the socket")
            await context.shutdown()
            return Empty()
        }
    }
}
