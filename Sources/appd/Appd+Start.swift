#if canImport(Glibc)
import Glibc
#endif
import Auth
import Bus
import Chat
import Payments
import Rating
import Todos
import PluginKit
import Storage

/// The composition root: builds each part of the daemon in a named step, top to bottom.
extension Appd {
    /// Runs the daemon until it is told to stop; returns the process exit code.
    static func start(_ config: AppdConfig, options: AppdOptions, configFile: String?) async -> Int32 {
        let startedAt = ContinuousClock.now
        // A client or log reader that goes away must never kill the daemon: writes get EPIPE.
        signal(SIGPIPE, SIG_IGN)

        // 1. Logging: one bootstrap, stderr (journald priority prefixes under systemd).
        LoggingSystem.bootstrap(level: config.logLevel) { _ in StreamLogHandler.standardError() }
        let logger = Logger(label: "appd")

        // 2. Who may call admin methods.
        var adminGroup: gid_t?
        if let name = config.adminGroup {
            guard let group = getgrnam(name) else {
                logger.critical("unknown admin group '\(name)'; create it or drop --admin-group")
                return 78
            }
            adminGroup = group.pointee.gr_gid
        }

        // 3. The control socket, claimed before anything else is touched: a second appd on a
        //    served socket stops here, before it opens the shared database or starts a plugin.
        //    0600, or 0660 with the admin group. Calls that arrive before step 8 wait in the
        //    backlog (as under socket activation, where systemd passes it in already listening).
        let path = config.socket
        let listener: ListeningSocket
        do {
            listener = try Systemd.takeListeningSocket().map { ListeningSocket.inherited(fd: $0, path: path) }
                ?? ListeningSocket.bind(path: path, mode: adminGroup == nil ? 0o600 : 0o660, group: adminGroup)
        } catch {
            logger.critical("\(error)")
            return 1
        }

        // 4. The database and its durable event log (before anything can accept a write).
        let dataDirectory = config.dataDirectory
        let database: SQLiteDatabase
        do {
            try DataDirectory.create(dataDirectory)
            database = try SQLiteDatabase(path: dataDirectory + "/appd.db", bus: nil, logger: Logger(label: "appd.storage"))
        } catch {
            logger.critical("cannot open the database in \(dataDirectory): \(error)")
            listener.close()
            return 1
        }
        let eventLog = EventLog(database: database)

        // 5. The plugins, and the bus with the gates they contribute, nested in the designed
        //    order and fixed from here on. A disabled plugin's gates are missing, so commands
        //    that need them are denied (fail closed).
        let plugins = installedPlugins(config, logger: logger)
        let enabled = plugins.filter { !config.disabledPlugins.contains($0.manifest.name) }
        let adminGate = AdminGate(adminGroup: adminGroup)
        let gates = GateOrder.sorted([adminGate, PluginScopeGate()] + enabled.flatMap { $0.gates(database: database) })
        let bus = EventBus(gates: gates, logger: Logger(label: "appd.bus"))
        database.attach(bus: bus)
        let host = PluginHost(
            plugins: plugins, disabled: Set(config.disabledPlugins),
            context: PluginContext(bus: bus, database: database, eventLog: eventLog, logger: Logger(label: "appd.plugin")),
            logger: logger)

        // 6. The varlink interfaces the daemon itself serves.
        let dispatcher: VarlinkDispatcher
        do {
            dispatcher = try VarlinkDispatcher(
                bus: bus,
                info: .init(vendor: "appd", product: "appd", version: Version.current, url: "https://github.com/appd/appd"))
        } catch {
            logger.critical("cannot set up the daemon's interfaces: \(error)")
            await database.close()
            listener.close()
            return 1
        }

        // 6b. External plugins (supervised processes from the plugin directories), and the
        //     credentials their own connections to appd present.
        var externalSettings = ExternalPluginSettings(
            directories: config.resolvedPluginDirectories,
            runtimeDirectory: dataDirectory + "/plugins-run", dataDirectory: dataDirectory + "/plugin-data", controlSocket: config.socket)
        externalSettings.healthInterval = config.pluginHealthInterval
        externalSettings.healthTimeout = min(.seconds(3), config.pluginHealthInterval)
        let external = ExternalPluginHost(
            settings: externalSettings,
            dispatcher: dispatcher, stateFile: dataDirectory + "/external-plugins.json", isAdmin: { adminGate.isPrivileged($0) },
            logger: Logger(label: "appd.plugins"))
        do {
            try BusInterface.install(on: dispatcher, replay: eventLog, credentials: external.credentials, isAdmin: { adminGate.isPrivileged($0) })
        } catch {
            logger.critical("cannot set up io.appd.Bus: \(error)")
            await database.close()
            listener.close()
            return 1
        }

        // 7. Start the plugins (dependency order) and serve their interfaces.
        await host.startAll()
        for text in await host.runningInterfaces() {
            do {
                try dispatcher.register(try VarlinkInterface(parsing: text))
            } catch {
                logger.error("a plugin's interface was not served", metadata: ["error": "\(error)"])
            }
        }

        // 8. The server on the socket claimed in step 3.
        let server: VarlinkServer
        do {
            server = try VarlinkServer(
                listener: listener, dispatcher: dispatcher, limits: config.limits, logger: Logger(label: "appd.varlink"))
        } catch {
            logger.critical("\(error)")
            await host.stopAll()
            await database.close()
            listener.close()
            return 1
        }

        // 9. Services, stopped in reverse order on SIGTERM/SIGINT or io.appd.Daemon.Shutdown.
        let retention = EventLogRetention(
            log: eventLog, limits: .init(maxAge: config.eventRetentionDays.map { .seconds(Int64($0) * 86_400) }, maxCount: config.eventRetentionCount))
        let reload = ReloadService(options: options, running: config, retention: retention, logger: logger)
        var services: [any Service] = [host, server, ExternalPluginService(host: external), retention, reload]
        if let interval = Systemd.watchdogInterval { services.append(WatchdogService(interval: interval)) }
        let group = ServiceGroup(services: services, logger: logger) {
            Systemd.notify("STOPPING=1\nSTATUS=finishing in-flight calls")
        }
        do {
            try DaemonInterface.install(
                on: dispatcher,
                context: .init(
                    startedAt: startedAt, connections: { server.stats.connections },
                    plugins: { await host.statuses() + external.statuses() }, eventLog: eventLog,
                    shutdown: { await group.triggerShutdown() }, external: external,
                    paths: .init(
                        dataDirectory: dataDirectory, socket: path, configFile: configFile, pluginDirectories: config.resolvedPluginDirectories),
                    isAdmin: { adminGate.isPrivileged($0) }))
        } catch {
            logger.critical("cannot set up io.appd.Daemon: \(error)")
            await database.close()
            listener.close()
            return 1
        }

        logger.notice(
            "appd started", metadata: ["version": Version.current, "socket": path, "data": dataDirectory, "config": configFile ?? "none"])
        // The database is open and the socket listens: tell systemd we are ready.
        Systemd.notify("READY=1\nSTATUS=serving on \(path)")
        var status: Int32 = 0
        do {
            try await group.run()
        } catch {
            logger.critical("appd stopped after a failure", metadata: ["error": "\(error)"])
            status = 1
        }
        // 10. In-flight calls are done: let subscribers finish, then close the database last.
        try? await bus.drain(timeout: .seconds(5))
        await database.close()
        logger.notice("appd stopped")
        return status
    }
}

/// The plugins built into this appd (each is a library target under Sources/Plugins).
func installedPlugins(_ config: AppdConfig, logger: Logger) -> [any Plugin] {
    var plugins: [any Plugin] = []
    do {
        var auth = AuthService.Options()
        auth.accessTokenLifetime = .seconds(config.accessTokenSeconds)
        auth.refreshTokenLifetime = .seconds(Int64(config.refreshTokenDays) * 86_400)
        auth.sessionCacheEntries = config.sessionCacheEntries
        plugins.append(try AuthPlugin(options: auth))
        plugins.append(TodosPlugin())
        plugins.append(PaymentsPlugin(options: config.payments))
    } catch {
        logger.error("the auth plugin could not be set up", metadata: ["error": "\(error)"])
    }
    do {
        plugins.append(try ChatPlugin(options: config.chatOptions))
    } catch {
        logger.error("the chat plugin could not be set up; fix chatBaseURL", metadata: ["error": "\(error)"])
    }
    plugins.append(RatingPlugin(rules: config.rating))
    return plugins
}
