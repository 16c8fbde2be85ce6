// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// What a plugin declares about itself; the host reads it before starting anything.
public struct PluginManifest: Sendable {
    public var name: String
    public var version: String
    /// Plugins that must be running before this one starts.
    public var dependencies: [String]
    /// The varlink interface it serves (IDL text), if any.
    public var interface: String?
    /// The event types it publishes: the host registers their topics for it (no one else may
    /// publish them), with their audience and payload type.
    public var events: [any Event.Type]
    /// The event types it consumes.
    public var consumes: [any Event.Type]
    /// Configuration keys it reads.
    public var configKeys: [String]
    /// The per-user settings the plugin reads (`io.appd.Settings` keeps and checks them).
    public var settings: [SettingDeclaration]

    public init(
        name: String, version: String, dependencies: [String] = [], interface: String? = nil, events: [any Event.Type] = [],
        consumes: [any Event.Type] = [], configKeys: [String] = [], settings: [SettingDeclaration] = []
    ) {
        self.name = name
        self.version = version
        self.dependencies = dependencies
        self.interface = interface
        self.events = events
        self.consumes = consumes
        self.configKeys = configKeys
        self.settings = settings
    }

    /// The topics it publishes, from its event types.
    public var publishes: [String] { events.map { $0.topic } }
}

/// What a plugin gets from the host: the bus, the database, its logger, and where to declare
/// its handlers.
public struct PluginContext: Sendable {
    public let bus: EventBus
    public let database: any Database
    public let eventLog: EventLog
    public let logger: Logger
    /// Where `start` declares the plugin's handlers; the host installs them once it returns.
    public let handlers: HandlerSet

    public init(bus: EventBus, database: any Database, eventLog: EventLog, logger: Logger, handlers: HandlerSet = HandlerSet()) {
        self.bus = bus
        self.database = database
        self.eventLog = eventLog
        self.logger = logger
        self.handlers = handlers
    }
}

/// A feature module hosted by appd. Plugins never call each other: they use the bus.
public protocol Plugin: Sendable {
    var manifest: PluginManifest { get }
    /// Schema changes the host applies before `start`.
    var migrations: [Migration] { get }
    /// Gates this plugin contributes, built before the bus (they read persisted state through
    /// the database, never through other plugins).
    func gates(database: any Database) -> [any Gate]
    /// Declares its handlers on `context.handlers`; returns when the plugin can serve. The host
    /// then checks them against `manifest.interface`, installs them and serves the interface.
    func start(_ context: PluginContext) async throws
    /// Long-running work (durable consumers, timers), restarted with backoff when it fails.
    func services(_ context: PluginContext) -> [any Service]
    /// Undoes what `start` did besides declaring handlers (the host removes those).
    func stop(_ context: PluginContext) async
    /// Paths it serves on the app-facing HTTP server while it runs (webhooks).
    func httpRoutes(_ context: PluginContext) -> [PluginHTTPRoute]
    /// Everything it holds about `user`, for the user's data export (GDPR articles 15 and 20):
    /// its rows of that user as JSON, never a secret (no token, digest or password hash) and
    /// nothing of another user; nil when it holds nothing.
    func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue?
}

extension Plugin {
    public var migrations: [Migration] { [] }
    public func gates(database: any Database) -> [any Gate] { [] }
    public func services(_ context: PluginContext) -> [any Service] { [] }
    public func stop(_ context: PluginContext) async {}
    public func httpRoutes(_ context: PluginContext) -> [PluginHTTPRoute] { [] }
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? { nil }
}

/// A plugin's rows of one user, by table: the queries of an export, run in one read.
public struct UserDataQuery: Sendable {
    public let name: String
    public let sql: String
    public var omitting: Set<String> = []
    public var times: Set<String> = []

    public init(_ name: String, _ sql: String, omitting: Set<String> = [], times: Set<String> = []) {
        self.name = name
        self.sql = sql
        self.omitting = omitting
        self.times = times
    }

    /// Runs each query with the user id as its one parameter; `{name: [rows]}`.
    public static func run(_ queries: [UserDataQuery], user: String, in database: any Database) async throws -> JSONValue {
        try await database.read { tx in
            var object: [String: JSONValue] = [:]
            for query in queries {
                object[query.name] = .array(try tx.query(query.sql, [.text(user)]).map { $0.exportJSON(omitting: query.omitting, times: query.times) })
            }
            return .object(object)
        }
    }
}

/// A plugin's lifecycle state and status, as `io.appd.Daemon.Plugins` declares them (Contracts).
public typealias PluginState = Contracts.PluginState
public typealias PluginStatus = Contracts.PluginStatus

/// The plugins' dependencies form a cycle; names the plugins in it.
public struct PluginDependencyCycle: Error, Equatable, CustomStringConvertible {
    public let plugins: [String]
    public var description: String { "plugin dependency cycle: \(plugins.joined(separator: " -> ")); break it in their manifests" }
}
