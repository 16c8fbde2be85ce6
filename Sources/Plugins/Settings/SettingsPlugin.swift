// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import EventDelivery
import PluginKit
import Storage

/// Per-user settings (`io.appd.Settings`): the keys every plugin declared in its manifest, each
/// value checked against its declaration, versioned, evented to its owner, erased with the
/// account. Other plugins read a value in effect with the in-process `ReadSetting`.
///
/// A plugin of its own rather than part of Auth's profile: the keys belong to the plugins that
/// declare them (chat's memory switch, its style per conversation), a profile belongs to the
/// account; and settings change often and from several devices, which wants versions per key,
/// not one version for the whole profile.
public struct SettingsPlugin: Plugin {
    public struct Options: Sendable {
        /// Values (for the account and per item) one account may hold.
        public var maxValuesPerUser = 1_000
        public init() {}
    }

    /// The settings this plugin declares itself: what every app wants to know of its user.
    public static let declarations = [
        SettingDeclaration(
            key: "locale", type: .string, default: "", plugin: "settings", description: "The user's language and region as a BCP 47 tag (en, pt-BR); empty: the device's."),
        SettingDeclaration(key: "timeZone", type: .string, default: "", plugin: "settings", description: "The user's IANA time zone (Europe/Paris); empty: the device's."),
    ]

    public let manifest: PluginManifest
    public var migrations: [Migration] { SettingsMigrations.all }

    let options: Options
    let catalog: SettingsCatalog
    let clock: @Sendable () -> WallTime

    /// `declared`: the other plugins' declarations (their manifests' `settings`).
    public init(declared: [SettingDeclaration], options: Options = Options(), clock: @escaping @Sendable () -> WallTime = { .now() }) {
        self.options = options
        self.clock = clock
        catalog = SettingsCatalog(Self.declarations + declared)
        manifest = PluginManifest(
            name: "settings", version: "0.1.0", dependencies: ["auth"], interface: SettingsInterface.idl, events: SettingsEvents.all,
            consumes: [AccountDeleted.self], settings: Self.declarations)
    }

    public func start(_ context: PluginContext) async throws {
        let repository = SettingsRepository(database: context.database)
        let catalog = self.catalog, clock = self.clock, limit = options.maxValuesPerUser
        let handlers = context.handlers
        handlers.handle(SettingsInterface.Declared.self) { _, _ in .init(declarations: catalog.all) }
        handlers.handle(SettingsInterface.Get.self) { c, e in
            let declaration = try catalog.declaration(c.key)
            let scope = try catalog.scope(c.scope, of: declaration)
            return .init(setting: try await repository.settings(owner: try owner(e), scope: scope, for: [declaration])[0])
        }
        handlers.handle(SettingsInterface.List.self) { c, e in
            let scope = try SettingsCatalog.checkedScope(c.scope)
            let shown = scope.isEmpty ? catalog.all : catalog.all.filter(\.scoped)
            return .init(settings: try await repository.settings(owner: try owner(e), scope: scope, for: shown))
        }
        handlers.handle(SettingsInterface.Set.self) { c, e in
            let declaration = try catalog.declaration(c.key)
            let scope = try catalog.scope(c.scope, of: declaration)
            try catalog.check(c.value, for: declaration)
            return .init(
                setting: try await repository.write(
                    owner: try owner(e), declaration: declaration, scope: scope, value: c.value, expected: try Self.expected(c.expectedVersion),
                    now: clock().nanosecondsSinceEpoch, limit: limit, causedBy: e))
        }
        handlers.handle(SettingsInterface.Reset.self) { c, e in
            let declaration = try catalog.declaration(c.key)
            let scope = try catalog.scope(c.scope, of: declaration)
            return .init(
                setting: try await repository.write(
                    owner: try owner(e), declaration: declaration, scope: scope, value: nil, expected: try Self.expected(c.expectedVersion),
                    now: clock().nanosecondsSinceEpoch, limit: limit, causedBy: e))
        }
        handlers.handleInProcess(ReadSetting.self) { c, _ in
            let declaration = try catalog.declaration(c.key)
            let scope = try catalog.scope(c.scope, of: declaration)
            return .init(value: try await repository.settings(owner: c.userID, scope: scope, for: [declaration])[0].value)
        }
    }

    static func expected(_ version: Int64?) throws(SettingsError) -> Int64? {
        if let version, version < 0 { throw .validation("expectedVersion", "is 0 (never set) or a version a previous reply gave") }
        return version
    }

    public func services(_ context: PluginContext) -> [any Service] {
        let repository = SettingsRepository(database: context.database)
        do {
            return [
                try DurableConsumer(name: "settings.accountDeleted", consuming: AccountDeleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    deleted, _ in try await repository.erase(deleted.userId)
                }
            ]
        } catch {
            return [FailedService(name: "settings.accountDeleted", error: error)]
        }
    }

    /// The user's values as they set them (defaults are not theirs).
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? {
        try await UserDataQuery.run(
            [UserDataQuery("values", "SELECT key, scope, value, version, updated_at FROM settings_values WHERE owner = ? AND value IS NOT NULL ORDER BY key, scope")],
            user: user, in: context.database)
    }
}

/// The signed-in user the gates established.
private func owner(_ envelope: Envelope) throws(SettingsError) -> String {
    try envelope.signedInUser(or: SettingsError.validation("session", "sign in first"))
}
