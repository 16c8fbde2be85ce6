#if canImport(Glibc)
import Glibc
#endif
import Bus
import PluginKit
import Storage

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
          # How often its services were restarted after failing.
          restarts: int
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
          eventLog: EventLogStatus
        )

        # The plugins, in start order, with their state.
        method Plugins() -> (plugins: []Plugin)

        # Stops the daemon gracefully: in-flight calls finish, then it exits 0. Admin only.
        method Shutdown() -> ()

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

    struct StatusReply: Codable, Sendable {
        var version: String
        var pid: Int
        var uptimeSeconds: Double
        var connections: Int
        var plugins: [PluginStatus]
        var bus: EventBus.Counters
        var eventLog: EventLogStatus
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
    }

    static func install(on dispatcher: VarlinkDispatcher, context: Context) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Ping.self) { _, _ in Empty() }
        try bus.register(Status.self) { _, _ in
            let uptime = ContinuousClock.now - context.startedAt
            let lag = try await context.eventLog.consumerLag()
            return StatusReply(
                version: Version.current, pid: Int(getpid()),
                uptimeSeconds: Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18,
                connections: context.connections(), plugins: await context.plugins(), bus: bus.counters,
                eventLog: EventLogStatus(
                    lastSeq: lag.last, consumers: lag.consumers.map { Consumer(name: $0.name, position: $0.position, lag: $0.lag) }))
        }
        try bus.register(Plugins.self) { _, _ in PluginsReply(plugins: await context.plugins()) }
        try bus.register(Shutdown.self) { _, envelope in
            envelope.logger.notice("shutdown requested over the socket")
            await context.shutdown()
            return Empty()
        }
    }
}
