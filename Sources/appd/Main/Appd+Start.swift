// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Contracts
import Glibc
#endif
import Auth
import Backups
import Bus
import Files
import Chat
import Payments
import Rating
import Settings
import Todos
import PluginKit
import Storage
import ExternalPlugins
import EventDelivery

/// The composition root: builds the daemon in named steps, top to bottom. Each step that
/// starts something registers how to undo it on `teardown`; whatever happens, appd stops
/// through that one path, undoing exactly what was started, in reverse.
extension Appd {
    /// Runs the daemon until it is told to stop; returns the process exit code.
    static func start(_ config: AppdConfig, options: AppdOptions, configFile: String?) async -> Int32 {
        // A client or log reader that goes away must never kill the daemon: writes get EPIPE.
        signal(SIGPIPE, SIG_IGN)
        // 1. Logging: one bootstrap, stderr (journald priority prefixes under systemd), written
        //    by a thread of its own off the callers' path (flushed last); the newest audit lines
        //    are also kept in memory for the console's audit page.
        let writer = LogWriter.standardError()
        let audit = LogTrail(capacity: config.console.auditLines, next: writer)
        LoggingSystem.bootstrap(level: config.logLevel) { label -> any LogHandler in label == "appd.audit" ? audit : writer }
        let logger = Logger(label: "appd")
        let teardown = Teardown(logger: logger)
        var status: Int32 = 0
        do {
            status = try await serve(config, options: options, configFile: configFile, audit: audit, teardown: teardown, logger: logger)
        } catch let failure as StartFailure {
            logger.critical("\(failure.message)")
            status = failure.exitCode
        } catch {
            logger.critical("\(error)")
            status = 1
        }
        await teardown.run()
        logger.notice("appd stopped")
        writer.flush()
        return status
    }

    /// Steps 2–10: builds and runs everything; returns when the services have stopped.
    private static func serve(
        _ config: AppdConfig, options: AppdOptions, configFile: String?, audit: LogTrail, teardown: Teardown, logger: Logger
    ) async throws -> Int32 {
        let startedAt = ContinuousClock.now
        let adminGate = AdminGate(adminGroup: try adminGroup(config))
        let listener = try await claimSocket(config, adminGroup: adminGate.adminGroup, teardown: teardown)
        let outbox = EventOutbox()
        let database = try await openDatabase(config, outbox: outbox, teardown: teardown)
        let eventLog = EventLog(database: database)
        let plugins = installedPlugins(config)
        let limits = AccountLimitsGate(perMinute: config.accountCallsPerMinute, burst: config.accountCallBurst)
        let bus = await connectBus(
            plugins: plugins, config: config, adminGate: adminGate, limits: limits, database: database, outbox: outbox, teardown: teardown)
        let context = PluginContext(bus: bus, database: database, eventLog: eventLog, logger: Logger(label: "appd.plugin"))
        let dispatcher = try makeDispatcher(bus: bus)
        let host = PluginHost(plugins: plugins, disabled: Set(config.disabledPlugins), context: context, dispatcher: dispatcher, logger: logger)
        let server = try listen(listener, dispatcher: dispatcher, config: config)
        let external = try externalPlugins(
            config, configFile: configFile, builtIn: plugins.map(\.manifest.name), bus: bus, dispatcher: dispatcher, server: server, eventLog: eventLog,
            adminGate: adminGate)
        await startPlugins(host, teardown: teardown)
        let http = try await httpAPI(
            config, dispatcher: dispatcher, host: host, external: external, plugins: plugins, context: context, eventLog: eventLog, logger: logger)
        let console = try await console(config, dispatcher: dispatcher, database: database, adminGate: adminGate, trail: audit, logger: logger)
        registerGauges(varlink: server, http: http, eventLog: eventLog)

        // 9. Services, stopped in reverse order on SIGTERM/SIGINT or io.appd.Daemon.Shutdown.
        let retention = EventLogRetention(
            log: eventLog, limits: .init(maxAge: config.eventRetentionDays.map { .seconds(Int64($0) * 86_400) }, maxCount: config.eventRetentionCount))
        let reload = ReloadService(options: options, running: config, retention: retention, logger: logger)
        let keys = IdempotencyGate.retention(database, keep: .seconds(Int64(config.idempotencyKeyHours) * 3600), logger: logger)
        let backups = try backupService(config, database: database, dispatcher: dispatcher)
        do {
            try ExportInterface.install(on: dispatcher, host: host, external: external, eventLog: eventLog, eventBytes: config.exportEventsMB << 20)
        } catch {
            throw StartFailure("cannot set up io.appd.Export: \(error)")
        }
        let erasure = ErasureService(bus: bus, database: database, settle: .seconds(5), logger: Logger(label: "appd.erasure"))
        var services: [any Service] = [host, server, ExternalPluginService(host: external), retention, keys, reload, backups, erasure]
        if let http { services.append(http) }
        if let console { services.append(console) }
        // With other instances on the database, the per-account and per-network limits are the
        // deployment's: each instance settles what it took with the others' every interval.
        if database.sharedAcrossInstances {
            let shared = [("accounts", limits.limiter)] + (http.map { [("http", $0.api.limiter)] } ?? [])
            services.append(SharedRateLimits(database: database, limits: shared, interval: config.sharedLimitsInterval, logger: Logger(label: "appd.limits")))
        }
        if let interval = Systemd.watchdogInterval { services.append(WatchdogService(interval: interval)) }
        let group = ServiceGroup(services: services, logger: logger) {
            Systemd.notify("STOPPING=1\nSTATUS=finishing in-flight calls")
        }
        do {
            try DaemonInterface.install(
                on: dispatcher, events: bus,
                context: .init(
                    startedAt: startedAt, connections: { server.stats.connections },
                    plugins: { await host.statuses() + external.statuses() }, eventLog: eventLog,
                    shutdown: { await group.triggerShutdown() }, external: external,
                    paths: .init(
                        dataDirectory: config.dataDirectory, socket: config.socket, configFile: configFile,
                        pluginDirectories: config.resolvedPluginDirectories,
                        database: config.database.map(PostgresURL.redacted) ?? config.dataDirectory + "/appd.db"),
                    backups: {
                        let outcome = backups.outcome
                        return .init(
                            directory: config.resolvedBackupDirectory, scheduleSeconds: config.backupScheduleSeconds, last: outcome.last, lastAt: outcome.lastAt,
                            lastError: outcome.lastError, failures: outcome.failures)
                    },
                    isAdmin: { adminGate.isPrivileged($0) }))
        } catch {
            throw StartFailure("cannot set up io.appd.Daemon: \(error)")
        }

        logger.notice(
            "appd started",
            metadata: [
                "version": Version.current, "socket": config.socket, "data": config.dataDirectory, "config": configFile ?? "none",
                "database": config.database.map(PostgresURL.redacted) ?? "sqlite", "http": http?.address ?? "off", "console": console?.address ?? "off",
            ])
        // The database is open and the socket listens: tell systemd we are ready.
        Systemd.notify("READY=1\nSTATUS=serving on \(config.socket)")
        do {
            try await group.run()
            return 0
        } catch {
            logger.critical("appd stopped after a failure", metadata: ["error": "\(error)"])
            return 1
        }
    }

    // MARK: The steps

    /// 2. Who may call admin methods: the admin group, when one is configured.
    static func adminGroup(_ config: AppdConfig) throws -> gid_t? {
        guard let name = config.adminGroup else { return nil }
        guard let group = getgrnam(name) else { throw StartFailure("unknown admin group '\(name)'; create it or drop --admin-group", exitCode: 78) }
        return group.pointee.gr_gid
    }

    /// 3. The control socket, claimed before anything else is touched: a second appd on a
    ///    served socket stops here, before it opens the shared database or starts a plugin.
    ///    0600, or 0660 with the admin group. Calls that arrive before the server starts wait
    ///    in the backlog (as under socket activation, where systemd passes it in listening).
    static func claimSocket(_ config: AppdConfig, adminGroup: gid_t?, teardown: Teardown) async throws -> ListeningSocket {
        let listener: ListeningSocket
        do {
            listener =
                try Systemd.takeListeningSocket().map { ListeningSocket.inherited(fd: $0, path: config.socket) }
                ?? ListeningSocket.bind(
                    path: config.socket, mode: adminGroup == nil ? 0o600 : 0o660, group: adminGroup, backlog: ListenBacklog.resolve(config.listenBacklog))
        } catch {
            throw StartFailure("\(error)")
        }
        await teardown.push("socket") { listener.close() }
        return listener
    }

    /// 4. The database and its durable event log (before anything can accept a write). Closed
    ///    last of all, after the services that write to it have stopped.
    ///    SQLite in the data directory, or the PostgreSQL database several instances share (the
    ///    data directory still holds this instance's plugin data).
    ///    What it commits goes to `outbox`, which step 5 relays onto the bus.
    static func openDatabase(_ config: AppdConfig, outbox: EventOutbox, teardown: Teardown) async throws -> any Database {
        let database: any Database
        do {
            try DataDirectory.create(config.dataDirectory, searchable: getuid() == 0 && config.pluginSandbox.mode == .bubblewrap)
        } catch {
            throw StartFailure("cannot create the data directory \(config.dataDirectory): \(error)")
        }
        if let url = config.database {
            var options = PostgresDatabase.Options()
            options.readers = config.databaseReadConnections
            do {
                database = try await PostgresDatabase.open(url: url, outbox: outbox, options: options, logger: Logger(label: "appd.storage"))
            } catch {
                throw StartFailure("cannot open the PostgreSQL database \(PostgresURL.redacted(url)): \(error)")
            }
        } else {
            do {
                database = try SQLiteDatabase(path: config.dataDirectory + "/appd.db", outbox: outbox, logger: Logger(label: "appd.storage"))
            } catch {
                throw StartFailure("cannot open the database in \(config.dataDirectory): \(error)")
            }
        }
        await teardown.push("database") { await database.close() }
        return database
    }

    /// 5. The bus, with the gates the enabled plugins contribute nested in the designed order
    ///    and fixed from here on. A disabled plugin's gates are missing, so commands that need
    ///    them are denied (fail closed). Gates read the database; what the database commits
    ///    reaches the bus through its outbox, which a relay publishes from here on.
    static func connectBus(
        plugins: [any Plugin], config: AppdConfig, adminGate: AdminGate, limits: AccountLimitsGate, database: any Database, outbox: EventOutbox,
        teardown: Teardown
    ) async -> EventBus {
        let enabled = plugins.filter { !config.disabledPlugins.contains($0.manifest.name) }
        // A row without an outcome is "still running" for as long as the longest call may take.
        let idempotency = IdempotencyGate(database: database, runningGrace: max(config.limits.callTimeout, config.http.callTimeout) * 2)
        let gates = [adminGate, PluginScopeGate(), limits, idempotency] + enabled.flatMap { $0.gates(database: database) }
        let bus = EventBus(gates: gates, logger: Logger(label: "appd.bus"))
        let relay = OutboxRelay(outbox: outbox, bus: bus).start()
        // At the end, the database closes first (closing again in step 4 does nothing), which
        // ends the outbox: everything committed is published, then subscribers get it.
        await teardown.push("bus") {
            await database.close()
            await relay.value
            try? await bus.drain(timeout: .seconds(5))
        }
        return bus
    }

    /// 6. The varlink interfaces the daemon itself serves.
    static func makeDispatcher(bus: EventBus) throws -> VarlinkDispatcher {
        do {
            return try VarlinkDispatcher(
                bus: bus, info: .init(vendor: "appd", product: "appd", version: Version.current, url: "https://github.com/appd/appd"))
        } catch {
            throw StartFailure("cannot set up the daemon's interfaces: \(error)")
        }
    }

    /// 6b. External plugins (supervised processes from the plugin directories, each in its
    ///     sandbox with a socket of its own on `server`), the credentials their own connections
    ///     to appd present, and io.appd.Bus.
    static func externalPlugins(
        _ config: AppdConfig, configFile: String?, builtIn: [String], bus: EventBus, dispatcher: VarlinkDispatcher, server: VarlinkServer, eventLog: EventLog, adminGate: AdminGate
    ) throws -> ExternalPluginHost {
        var settings = ExternalPluginSettings(
            directories: config.resolvedPluginDirectories,
            runtimeDirectory: config.dataDirectory + "/plugins-run", dataDirectory: config.dataDirectory + "/plugin-data", controlSocket: config.socket,
            server: server)
        settings.healthInterval = config.pluginHealthInterval
        settings.healthTimeout = min(.seconds(3), config.pluginHealthInterval)
        settings.sandbox = config.pluginSandbox
        settings.admission.reservedNames.formUnion(builtIn)
        settings.admission.withheldVariables.formUnion(ConfigKey.all.map(\.environment))
        // appd's own files stay hidden even where they lie in a tree a plugin sees.
        settings.sandbox.hiddenPaths += [config.dataDirectory, config.socket] + (configFile.map { [$0] } ?? [])
        for path in [config.dataDirectory, config.resolvedBackupDirectory, config.socket]
            + [configFile, config.applePrivateKeyFile, config.tokenEncryptionKeyFile, config.appStorePrivateKeyFile, config.googlePlayServiceAccountFile].compactMap({ $0 })
        {
            settings.sandbox.protected.protect(path)
        }
        for directory in config.resolvedPluginDirectories { settings.sandbox.protected.protectPluginDirectory(directory) }
        // Each plugin's key files reach it only through /run/credentials, never the folder itself.
        if let credentials = config.pluginSandbox.credentialsDirectory {
            settings.sandbox.hiddenPaths.append(credentials)
            settings.sandbox.protected.protect(credentials)
        }
        let external = ExternalPluginHost(
            settings: settings, topics: bus.topics, dispatcher: dispatcher, stateFile: config.dataDirectory + "/external-plugins.json",
            isAdmin: { adminGate.isPrivileged($0) }, logger: Logger(label: "appd.plugins"))
        let peers = external.peers
        server.bindPluginPeers { peers.scope(of: $0) }
        do {
            try BusInterface.install(
                on: dispatcher, events: bus, limits: config.subscribe, replay: eventLog, credentials: external.credentials, isAdmin: { adminGate.isPrivileged($0) })
        } catch {
            throw StartFailure("cannot set up io.appd.Bus: \(error)")
        }
        return external
    }

    /// 7. Starts the built-in plugins (dependency order); the host installs each one's handlers
    ///    and serves its interface. Returns the interfaces served.
    static func startPlugins(_ host: PluginHost, teardown: Teardown) async {
        await host.startAll()
        await teardown.push("plugins") { await host.stopAll() }
    }

    /// 9b. Backups (io.appd.Backup): made by hand or on a schedule, of the SQLite database and
    ///     the external plugins' data.
    static func backupService(_ config: AppdConfig, database: any Database, dispatcher: VarlinkDispatcher) throws -> BackupService {
        let backups = Backups(directory: config.resolvedBackupDirectory, dataDirectory: config.dataDirectory, database: database)
        do { try backups.prepareDirectory() } catch { throw StartFailure("the backup directory: \(error)") }
        let service = BackupService(
            backups: backups, interval: config.backupScheduleSeconds > 0 ? .seconds(config.backupScheduleSeconds) : nil, keep: config.backupKeep,
            logger: Logger(label: "appd.backup"))
        do {
            try BackupInterface.install(on: dispatcher, service: service, backups: backups)
        } catch {
            throw StartFailure("cannot set up io.appd.Backup: \(error)")
        }
        return service
    }

    /// 8. The server on the socket claimed in step 3, made before the external plugins (each
    ///    gets a socket of its own on it); it runs as a service of step 9.
    static func listen(_ listener: ListeningSocket, dispatcher: VarlinkDispatcher, config: AppdConfig) throws -> VarlinkServer {
        do {
            return try VarlinkServer(listener: listener, dispatcher: dispatcher, limits: config.limits, logger: Logger(label: "appd.varlink"))
        } catch {
            throw StartFailure("\(error)")
        }
    }
}

/// The plugins built into this appd (each a library target under Sources/Plugins/<Feature>).
/// Each is built on its own: one that cannot be (its configuration is refused) is listed as
/// failed with the reason, and only the plugins that depend on it are skipped.
func installedPlugins(_ config: AppdConfig) -> [any Plugin] {
    let features: [any Plugin] = [
        UnavailablePlugin.build("auth") {
            var auth = AuthService.Options()
            auth.accessTokenLifetime = .seconds(config.accessTokenSeconds)
            auth.refreshTokenLifetime = .seconds(Int64(config.refreshTokenDays) * 86_400)
            auth.sessionCacheEntries = config.sessionCacheEntries
            auth.identity = try config.resolvedIdentity()
            auth.requireVerifiedEmail = config.requireVerifiedEmail
            auth.resetLink = try config.authResetLinkTemplate.map { try ResetLinkTemplate($0) }
            auth.guestAccounts = config.guestAccounts
            auth.guestIdleLifetime = .seconds(Int64(config.guestIdleDays) * 86_400)
            return try AuthPlugin(options: auth)
        },
        UnavailablePlugin.build("todos") {
            TodosPlugin(
                maxTodosPerUser: config.todosPerUser, tombstoneRetention: .seconds(Int64(config.tombstoneDays) * 86_400),
                storageLimit: Int64(config.accountStorageMB) << 20)
        },
        UnavailablePlugin.build("payments") { PaymentsPlugin(options: try config.resolvedPayments()) },
        UnavailablePlugin.build("chat") { try ChatPlugin(options: config.chatOptions) },
        UnavailablePlugin.build("rating") { RatingPlugin(rules: config.rating) },
        UnavailablePlugin.build("files") { try FilesPlugin(options: try config.files.options(dataDirectory: config.dataDirectory)) },
    ]
    // Settings last: it keeps the keys the others declare.
    return features + [SettingsPlugin(declared: features.flatMap(\.manifest.settings))]
}
