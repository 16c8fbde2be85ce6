#if canImport(Glibc)
import Glibc
#endif
import Bus
import PluginKit
import Storage
import ExternalPlugins

/// `io.appd.Daemon`: the daemon's own control methods.
enum DaemonInterface {
    static let idl = """
        # Control and introspection of the appd daemon itself.
        interface io.appd.Daemon

        # Counters of the in-process event bus.
        type BusCounters (
          commands: int,
          events: int,
          deliveries: int,
          subscriptions: int
        )

        # A plugin's lifecycle state.
        type Plugin (
          name: string,
          version: string,
          state: (starting, running, degraded, failed, stopped),
          # Why it failed, is degraded, or was not started.
          lastError: ?string,
          # How often its services (or, external, its process) were restarted after failing.
          restarts: int,
          kind: (builtin, external),
          # An external plugin's process id while it runs.
          pid: ?int,
          interfaces: []string,
          # An external plugin's confinement: sandbox, network, uid, memory limit.
          sandbox: ?string,
          # What an external plugin's manifest asks for: the methods it may call, its
          # capabilities, the topics it publishes and subscribes to, the environment variables
          # passed to it, methods routed over HTTP, the network.
          grants: ?string
        )

        # A durable consumer's position in the event log and how far behind it is.
        type Consumer (name: string, position: int, lag: int)

        # The durable event log: its newest sequence number and its consumers.
        type EventLogStatus (lastSeq: int, consumers: []Consumer)

        # Answers at once: the daemon is up and serving.
        method Ping() -> ()

        # What the daemon is doing now.
        method Status() -> (
          version: string,
          pid: int,
          uptimeSeconds: float,
          # Client connections open now.
          connections: int,
          plugins: []Plugin,
          bus: BusCounters,
          eventLog: EventLogStatus,
          # Where the daemon keeps things (shown to admins only).
          paths: ?Paths,
          # Backups: the last one made and the last failure (shown to admins only).
          backups: ?BackupStatus
        )

        # Backups (io.appd.Backup): where they go, how often, the newest made, the last
        # failure while it is the newest attempt, failures so far.
        type BackupStatus (directory: string, scheduleSeconds: int, last: ?string, lastAt: ?string, lastError: ?string, failures: int)

        # The resolved locations: data directory, socket, configuration file, the directories
        # external plugins are looked for in, and the database (the SQLite file, or the
        # PostgreSQL URL several instances share, without its password).
        type Paths (dataDirectory: string, socket: string, configFile: ?string, pluginDirectories: []string, database: ?string)

        # A directory external plugins are looked for in.
        type PluginDirectory (path: string, exists: bool, folders: int)

        # A plugin folder that was skipped, and why.
        type SkippedFolder (folder: string, reason: string)

        # The plugins, in start order, with their state.
        method Plugins() -> (plugins: []Plugin)

        # Stops the daemon gracefully: in-flight calls finish, then it exits 0. Admin only.
        method Shutdown() -> ()

        # Admin: restarts an external plugin (its in-flight calls finish first).
        method RestartPlugin(name: string) -> ()

        # Admin: starts an external plugin and keeps it enabled across restarts of appd.
        method EnablePlugin(name: string) -> ()

        # Admin: stops an external plugin and keeps it disabled across restarts of appd.
        method DisablePlugin(name: string) -> ()

        # Admin: picks up new plugin folders, drops removed ones, and restarts the plugins whose
        # plugin.json or executable path changed — without restarting appd.
        method RescanPlugins() -> (
          added: []string,
          removed: []string,
          changed: []string,
          # The plugin directories read, in order: whether each exists and how many plugin
          # folders it holds.
          directories: []PluginDirectory,
          # Folders that were not started, and why.
          skipped: []SkippedFolder
        )

        # A call to an external plugin that is down, restarting or stopped.
        error PluginUnavailable (plugin: string, reason: string)

        # No external plugin has this name.
        error UnknownPlugin (name: string)

        # The plugin is disabled; enable it first.
        error PluginDisabled (name: string)

        """

    struct Ping: Command {
        static let method = "io.appd.Daemon.Ping"
        typealias Reply = Empty
    }

    struct Status: Command {
        static let method = "io.appd.Daemon.Status"
        typealias Reply = StatusReply
    }

    struct Plugins: Command {
        static let method = "io.appd.Daemon.Plugins"
        typealias Reply = PluginsReply
    }

    struct PluginsReply: Codable, Sendable {
        var plugins: [PluginStatus]
    }

    struct Shutdown: Command {
        static let method = "io.appd.Daemon.Shutdown"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = Empty
    }

    struct PluginName: Codable, Sendable { var name: String }
    struct RestartPlugin: Command {
        static let method = "io.appd.Daemon.RestartPlugin"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = Empty
        var name: String
    }
    struct EnablePlugin: Command {
        static let method = "io.appd.Daemon.EnablePlugin"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = Empty
        var name: String
    }
    struct DisablePlugin: Command {
        static let method = "io.appd.Daemon.DisablePlugin"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = Empty
        var name: String
    }
    struct RescanPlugins: Command {
        static let method = "io.appd.Daemon.RescanPlugins"
        static let requirements: [Requirement] = [.admin]
        struct Reply: Codable, Sendable {
            var added: [String]
            var removed: [String]
            var changed: [String]
            var directories: [Directory]
            var skipped: [Skipped]
        }
        struct Directory: Codable, Sendable {
            var path: String
            var exists: Bool
            var folders: Int
        }
        struct Skipped: Codable, Sendable {
            var folder: String
            var reason: String
        }
    }

    struct StatusReply: Codable, Sendable {
        var version: String
        var pid: Int
        var uptimeSeconds: Double
        var connections: Int
        var plugins: [PluginStatus]
        var bus: EventBus.Counters
        var eventLog: EventLogStatus
        var paths: Paths?
        var backups: BackupStatus?
    }

    struct BackupStatus: Codable, Sendable {
        var directory: String
        var scheduleSeconds: Int
        var last: String?
        var lastAt: String?
        var lastError: String?
        var failures: Int
    }

    struct Paths: Codable, Sendable {
        var dataDirectory: String
        var socket: String
        var configFile: String?
        var pluginDirectories: [String]
        var database: String?
    }

    struct EventLogStatus: Codable, Sendable {
        var lastSeq: Int64
        var consumers: [Consumer]
    }

    struct Consumer: Codable, Sendable {
        var name: String
        var position: Int64
        var lag: Int64
    }

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

    static func install(on dispatcher: VarlinkDispatcher, context: Context) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Ping.self) { _, _ in Empty() }
        try bus.register(Status.self) { _, envelope in
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
        try bus.register(Plugins.self) { _, _ in PluginsReply(plugins: await context.plugins()) }
        let external = context.external
        try bus.register(RestartPlugin.self) { command, _ in
            try await external.restart(command.name)
            return Empty()
        }
        try bus.register(EnablePlugin.self) { command, _ in
            try await external.enable(command.name)
            return Empty()
        }
        try bus.register(DisablePlugin.self) { command, _ in
            try await external.disable(command.name)
            return Empty()
        }
        try bus.register(RescanPlugins.self) { _, _ in
            let outcome = await external.rescan()
            return .init(
                added: outcome.added, removed: outcome.removed, changed: outcome.changed,
                directories: outcome.directories.map { .init(path: $0.path, exists: $0.exists, folders: $0.folders) },
                skipped: outcome.skipped.map { .init(folder: $0.folder, reason: $0.reason) })
        }
        try bus.register(Shutdown.self) { _, envelope in
            envelope.logger.notice("shutdown requested over the socket")
            await context.shutdown()
            return Empty()
        }
    }
}
