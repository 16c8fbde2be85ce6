// SPDX-License-Identifier: Apache-2.0
import Bus
import Storage

/// Starts plugins in dependency order and stops them in reverse; supervises their services
/// (restart with capped exponential backoff); keeps each plugin's state and last error.
///
/// A plugin that fails to start is reported, its dependants are skipped with the reason, and
/// everything else keeps serving. A disabled plugin is not started: commands needing a gate it
/// would contribute are denied by the bus (fail closed).
public actor PluginHost: Service {
    public struct Options: Sendable {
        public var startTimeout: Duration = .seconds(30)
        public var stopTimeout: Duration = .seconds(10)
        public var initialBackoff: Duration = .milliseconds(100)
        public var maxBackoff: Duration = .seconds(30)
        /// A restarted service that runs this long without failing counts as healthy again.
        public var healthyAfter: Duration = .seconds(10)
        public init() {}
    }

    struct Entry {
        let plugin: any Plugin
        var supervision: Supervision
        var interfaces: [String]
        var services: [Task<Void, Never>] = []
        /// What the host installed for it while it runs: its handlers and its served interface.
        var handlers: HandlerSet?
        var served: String?

        var status: PluginStatus {
            PluginStatus(
                name: plugin.manifest.name, version: plugin.manifest.version, state: supervision.reportedState(), lastError: supervision.lastError,
                restarts: supervision.restarts, interfaces: interfaces)
        }
    }

    public nonisolated var name: String { "plugins" }
    private let context: PluginContext
    /// Where running plugins' interfaces are served (nil: on the bus only, as in some tests).
    private let dispatcher: VarlinkDispatcher?
    private let options: Options
    private let logger: Logger
    private var entries: [String: Entry] = [:]
    private var order: [String] = []
    private var started: [String] = []
    private var didStart = false

    public init(
        plugins: [any Plugin], disabled: Set<String>, context: PluginContext, dispatcher: VarlinkDispatcher? = nil, options: Options = Options(),
        logger: Logger
    ) {
        self.context = context
        self.dispatcher = dispatcher
        self.options = options
        self.logger = logger
        for plugin in plugins {
            let manifest = plugin.manifest
            guard entries[manifest.name] == nil else {
                logger.warning("a second plugin with the same name was ignored", metadata: ["plugin": manifest.name])
                continue
            }
            var state: PluginState = disabled.contains(manifest.name) ? .stopped : .starting
            var lastError = disabled.contains(manifest.name) ? "disabled by configuration" : nil
            // Its topics are its own even while it is disabled: nobody else may publish them.
            do {
                try context.bus.topics.register(manifest.events, publisher: manifest.name)
            } catch {
                logger.error("a plugin's event types were refused", metadata: ["plugin": manifest.name, "error": "\(error)"])
                state = .failed
                lastError = "its event types were refused: \(error)"
            }
            let policy = RestartPolicy(initialBackoff: options.initialBackoff, maxBackoff: options.maxBackoff, healthyAfter: options.healthyAfter)
            entries[manifest.name] = Entry(
                plugin: plugin, supervision: Supervision(plugin: manifest.name, policy: policy, state: state, lastError: lastError),
                interfaces: manifest.interface.flatMap { try? VarlinkInterface(parsing: $0).name }.map { [$0] } ?? [])
        }
    }

    /// The names of the interfaces the running plugins serve.
    public func servedInterfaces() -> Set<String> {
        Set(entries.values.compactMap(\.served))
    }

    /// The HTTP routes of the plugins that are running, in start order.
    public func httpRoutes() -> [PluginHTTPRoute] {
        order.flatMap { name -> [PluginHTTPRoute] in
            guard let entry = entries[name], entry.supervision.state == .running || entry.supervision.state == .degraded else { return [] }
            return entry.plugin.httpRoutes(pluginContext(name))
        }
    }

    /// What the running plugins hold about `user`, by plugin name (those holding nothing are left out).
    public func exportUserData(_ user: String) async throws -> [String: JSONValue] {
        var export: [String: JSONValue] = [:]
        for name in order {
            guard let entry = entries[name], entry.supervision.state == .running || entry.supervision.state == .degraded else { continue }
            if let data = try await entry.plugin.exportUserData(user, pluginContext(name)) { export[name] = data }
        }
        return export
    }

    /// Every plugin's state, in start order.
    public func statuses() -> [PluginStatus] {
        let names = order + entries.keys.filter { !order.contains($0) }.sorted()
        return names.compactMap { entries[$0]?.status }
    }

    public nonisolated func run() async throws {
        await startAll()  // a no-op when the composition root started them already
        await gracefulShutdown()
        await stopAll()
    }

    // MARK: Start

    /// Starts every enabled plugin in dependency order (once).
    public func startAll() async {
        guard !didStart else { return }
        didStart = true
        let manifests = entries.values.map(\.plugin.manifest)
        var sorted: [PluginManifest]
        do {
            sorted = try PluginOrder.sorted(manifests)
        } catch {
            // The plugins in the cycle fail; the rest start (their dependants are skipped).
            for name in Set(error.plugins) { fail(name, "\(error)") }
            sorted = (try? PluginOrder.sorted(manifests.filter { !error.plugins.contains($0.name) })) ?? []
        }
        order = sorted.map(\.name)
        // Every plugin's handlers first, then every plugin's services: a service (a durable
        // consumer resuming a job cut by a crash) may call any plugin's handler from its first
        // moment, so none runs before all are installed.
        var services: [(String, [any Service])] = []
        for manifest in sorted {
            if let started = await start(manifest.name) { services.append((manifest.name, started)) }
        }
        for (name, list) in services { launch(list, of: name) }
    }

    private func launch(_ services: [any Service], of name: String) {
        for service in services {
            // Unstructured: plugins start and stop one by one at run time (reload), not with one scope; kept in `entries`, cancelled at unload.
            let task = Task { await self.supervise(service, of: name) }
            entries[name]?.services.append(task)
        }
    }

    /// Starts a plugin: its migrations, its start, its handlers and interface. Returns the
    /// services it runs, for the caller to launch (nil when it did not start).
    private func start(_ name: String) async -> [any Service]? {
        guard let entry = entries[name], entry.supervision.state == .starting else { return nil }
        for dependency in entry.plugin.manifest.dependencies {
            guard let other = entries[dependency] else {
                fail(name, "depends on '\(dependency)', which is not installed")
                return nil
            }
            guard other.supervision.state == .running || other.supervision.state == .degraded else {
                fail(name, "skipped: its dependency '\(dependency)' is \(other.supervision.state.rawValue)")
                return nil
            }
        }
        let plugin = entry.plugin
        let handlers = HandlerSet()
        let context = pluginContext(name, handlers)
        do {
            let interface = try plugin.manifest.interface.map { try VarlinkInterface(parsing: $0) }
            try await withTimeout(options.startTimeout, "start") {
                try await Migrator.migrate(context.database, plugin.migrations)
                try await plugin.start(context)
            }
            try handlers.activate(on: context.bus, interface: interface, plugin: name)
            if let interface, let dispatcher {
                do {
                    try dispatcher.register(interface)
                } catch {
                    handlers.deactivate(on: context.bus)
                    throw error
                }
                entries[name]?.served = interface.name
            }
            entries[name]?.handlers = handlers
        } catch {
            logger.error("plugin failed to start", metadata: ["plugin": name, "error": "\(error)"])
            fail(name, "\(error)")
            return nil
        }
        entries[name]?.supervision.running()
        started.append(name)
        logger.info("plugin running", metadata: ["plugin": name, "version": plugin.manifest.version])
        return plugin.services(context)
    }

    private func fail(_ name: String, _ reason: String) {
        entries[name]?.supervision.refused(reason)
    }

    private func pluginContext(_ name: String, _ handlers: HandlerSet = HandlerSet()) -> PluginContext {
        var logger = context.logger
        logger[metadataKey: "plugin"] = name
        return PluginContext(bus: context.bus, database: context.database, eventLog: context.eventLog, logger: logger, handlers: handlers)
    }

    // MARK: Supervision

    /// Runs a service until the host stops; restarts it after a failure when the plugin's
    /// supervision says so (capped exponential backoff), as an external plugin's process is.
    private func supervise(_ service: any Service, of plugin: String) async {
        while !Task.isCancelled {
            let began = ContinuousClock.now
            do {
                try await service.run()
                if Task.isCancelled { return }
                logger.notice("plugin service finished", metadata: ["plugin": plugin, "service": service.name])
                return
            } catch {
                if Task.isCancelled { return }
                guard let next = entries[plugin]?.supervision.failed("\(service.name): \(error)", ranFor: ContinuousClock.now - began) else { return }
                guard case .restart(let delay) = next else {
                    logger.error("plugin service failed; not restarting it", metadata: ["plugin": plugin, "service": service.name, "error": "\(error)"])
                    return
                }
                logger.error(
                    "plugin service failed; restarting",
                    metadata: ["plugin": plugin, "service": service.name, "error": "\(error)", "retry.in": "\(delay)"])
                try? await Task.sleep(for: delay)
                entries[plugin]?.supervision.restarting(manual: false)
            }
        }
    }

    // MARK: Stop

    /// Stops running plugins: every service, then each plugin in reverse start order.
    public func stopAll() async {
        // Every plugin's services first (a consumer mid-job may still call any plugin), then
        // each plugin's handlers and its stop, in reverse start order.
        for name in started.reversed() {
            for task in entries[name]?.services ?? [] { task.cancel() }
        }
        for name in started.reversed() {
            for task in entries[name]?.services ?? [] {
                _ = try? await withTimeout(options.stopTimeout, "stop") { await task.value }
            }
        }
        for name in started.reversed() {
            guard let entry = entries[name] else { continue }
            // Its interface and handlers go first: nothing new reaches a stopping plugin.
            if let served = entry.served { dispatcher?.unregister(interface: served) }
            entry.handlers?.deactivate(on: context.bus)
            let plugin = entry.plugin
            let context = pluginContext(name)
            _ = try? await withTimeout(options.stopTimeout, "stop") { await plugin.stop(context) }
            entries[name]?.supervision.stopped()
            entries[name]?.services = []
            entries[name]?.handlers = nil
            entries[name]?.served = nil
        }
        started = []
    }

    /// Runs `work`, giving up after `limit` (the work is cancelled; see `withTimeout`).
    private nonisolated func withTimeout<T: Sendable>(
        _ limit: Duration, _ what: String, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await Bus.withTimeout(limit, timeoutError: { PluginTimeout(what: what, limit: limit) }, work)
    }
}

/// A plugin did not start or stop in time.
public struct PluginTimeout: Error, CustomStringConvertible {
    public let what: String
    public let limit: Duration
    public var description: String { "did not \(what) within \(limit)" }
}
