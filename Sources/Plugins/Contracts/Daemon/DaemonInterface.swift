// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Daemon`: the daemon's own control methods.
public enum DaemonInterface {
    public static let idl = """
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

        # Admin: whether a user has the app open: how many io.appd.Bus.Subscribe streams of theirs
        # are open now (over the socket or HTTP). A push plugin sends only to users with none.
        method Presence(userId: string) -> (streams: int)

        # A call to an external plugin that is down, restarting or stopped.
        # category: unavailable
        error PluginUnavailable (plugin: string, reason: string)

        # No external plugin has this name.
        # category: invalid
        error UnknownPlugin (name: string)

        # The plugin is disabled; enable it first.
        # category: unavailable
        error PluginDisabled (name: string)

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [
        Ping.self, Status.self, Plugins.self, Shutdown.self, RestartPlugin.self, EnablePlugin.self, DisablePlugin.self, RescanPlugins.self, Presence.self,
    ]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = DaemonError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }

    public struct Ping: Command {
        public static let method = "io.appd.Daemon.Ping"
        public static let requirements: [Requirement] = [.socket]
        public typealias Reply = Empty
        public init() {}
    }

    public struct Status: Command {
        public static let method = "io.appd.Daemon.Status"
        public static let requirements: [Requirement] = [.socket]
        public typealias Reply = StatusReply
        public init() {}
    }

    public struct Plugins: Command {
        public static let method = "io.appd.Daemon.Plugins"
        public static let requirements: [Requirement] = [.socket]
        public typealias Reply = PluginsReply
        public init() {}
    }

    public struct PluginsReply: Codable, Sendable {
        public var plugins: [PluginStatus]
        public init(plugins: [PluginStatus]) {
            self.plugins = plugins
        }
    }

    public struct Shutdown: Command {
        public static let method = "io.appd.Daemon.Shutdown"
        public static let requirements: [Requirement] = [.admin, .socket]
        public typealias Reply = Empty
        public init() {}
    }

    public struct PluginName: Codable, Sendable {
        public var name: String
        public init(name: String) {
            self.name = name
        }
    }
    public struct Presence: Command {
        public static let method = "io.appd.Daemon.Presence"
        public static let requirements: [Requirement] = [.admin, .socket]
        public struct Reply: Codable, Sendable, Equatable {
            public var streams: Int
            public init(streams: Int) { self.streams = streams }
        }
        public var userId: String
        public init(userId: String) { self.userId = userId }
    }
    public struct RestartPlugin: Command {
        public static let method = "io.appd.Daemon.RestartPlugin"
        public static let requirements: [Requirement] = [.admin, .socket]
        public typealias Reply = Empty
        public var name: String
        public init(name: String) {
            self.name = name
        }
    }
    public struct EnablePlugin: Command {
        public static let method = "io.appd.Daemon.EnablePlugin"
        public static let requirements: [Requirement] = [.admin, .socket]
        public typealias Reply = Empty
        public var name: String
        public init(name: String) {
            self.name = name
        }
    }
    public struct DisablePlugin: Command {
        public static let method = "io.appd.Daemon.DisablePlugin"
        public static let requirements: [Requirement] = [.admin, .socket]
        public typealias Reply = Empty
        public var name: String
        public init(name: String) {
            self.name = name
        }
    }
    public struct RescanPlugins: Command {
        public static let method = "io.appd.Daemon.RescanPlugins"
        public static let requirements: [Requirement] = [.admin, .socket]
        public struct Reply: Codable, Sendable {
            public var added: [String]
            public var removed: [String]
            public var changed: [String]
            public var directories: [Directory]
            public var skipped: [Skipped]
            public init(added: [String], removed: [String], changed: [String], directories: [Directory], skipped: [Skipped]) {
                self.added = added
                self.removed = removed
                self.changed = changed
                self.directories = directories
                self.skipped = skipped
            }
        }
        public struct Directory: Codable, Sendable {
            public var path: String
            public var exists: Bool
            public var folders: Int
            public init(path: String, exists: Bool, folders: Int) {
                self.path = path
                self.exists = exists
                self.folders = folders
            }
        }
        public struct Skipped: Codable, Sendable {
            public var folder: String
            public var reason: String
            public init(folder: String, reason: String) {
                self.folder = folder
                self.reason = reason
            }
        }
        public init() {}
    }

    public struct StatusReply: Codable, Sendable {
        public var version: String
        public var pid: Int
        public var uptimeSeconds: Double
        public var connections: Int
        public var plugins: [PluginStatus]
        public var bus: BusCounters
        public var eventLog: EventLogStatus
        public var paths: Paths?
        public var backups: BackupStatus?
        public init(
            version: String, pid: Int, uptimeSeconds: Double, connections: Int, plugins: [PluginStatus], bus: BusCounters, eventLog: EventLogStatus, paths: Paths? = nil,
            backups: BackupStatus? = nil
        ) {
            self.version = version
            self.pid = pid
            self.uptimeSeconds = uptimeSeconds
            self.connections = connections
            self.plugins = plugins
            self.bus = bus
            self.eventLog = eventLog
            self.paths = paths
            self.backups = backups
        }
    }

    public struct BackupStatus: Codable, Sendable {
        public var directory: String
        public var scheduleSeconds: Int
        public var last: String?
        public var lastAt: String?
        public var lastError: String?
        public var failures: Int
        public init(directory: String, scheduleSeconds: Int, last: String? = nil, lastAt: String? = nil, lastError: String? = nil, failures: Int) {
            self.directory = directory
            self.scheduleSeconds = scheduleSeconds
            self.last = last
            self.lastAt = lastAt
            self.lastError = lastError
            self.failures = failures
        }
    }

    public struct Paths: Codable, Sendable {
        public var dataDirectory: String
        public var socket: String
        public var configFile: String?
        public var pluginDirectories: [String]
        public var database: String?
        public init(dataDirectory: String, socket: String, configFile: String? = nil, pluginDirectories: [String], database: String? = nil) {
            self.dataDirectory = dataDirectory
            self.socket = socket
            self.configFile = configFile
            self.pluginDirectories = pluginDirectories
            self.database = database
        }
    }

    public struct EventLogStatus: Codable, Sendable {
        public var lastSeq: Int64
        public var consumers: [Consumer]
        public init(lastSeq: Int64, consumers: [Consumer]) {
            self.lastSeq = lastSeq
            self.consumers = consumers
        }
    }

    public struct Consumer: Codable, Sendable {
        public var name: String
        public var position: Int64
        public var lag: Int64
        public init(name: String, position: Int64, lag: Int64) {
            self.name = name
            self.position = position
            self.lag = lag
        }
    }

}

/// The typed errors of `io.appd.Daemon`.
public enum DaemonError: InterfaceError {
    public static let interface = "io.appd.Daemon"

    /// A call to an external plugin that is down or stopping fails fast with this.
    case pluginUnavailable(plugin: String, reason: String)
    case unknownPlugin(name: String)
    case pluginDisabled(name: String)

    public var description: String {
        switch self {
        case .pluginUnavailable(let plugin, let reason): "plugin '\(plugin)' is unavailable: \(reason); see 'appctl plugins'"
        case .unknownPlugin(let name): "no external plugin is named '\(name)'; see 'appctl plugins' (built-in plugins are configured with disabledPlugins)"
        case .pluginDisabled(let name): "plugin '\(name)' is disabled; 'appctl plugins enable \(name)' starts it"
        }
    }
}
