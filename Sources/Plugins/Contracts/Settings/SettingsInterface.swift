// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Settings`: a signed-in user's settings, each declared by a plugin with its type and
/// default, versioned so two devices do not overwrite each other.
public enum SettingsInterface {
    public static let idl = """
        # Per-user settings. Plugins declare their keys (a type, a default, whether a value may be
        # set per item such as a conversation); a user reads and sets only their own. A value set
        # for a scope (an item's id) overrides the account's value for that item; Get with a scope
        # falls back to the account's value, then to the default. Every value has a version that
        # goes up with each change; Set and Reset with expectedVersion refuse a value changed since
        # (0: expected never set) with a Conflict carrying the value as it stands.
        interface io.appd.Settings

        # Exactly one is set, as the declaration's type says (an enum's value is a string).
        type Value (
          bool: ?bool,
          int: ?int,
          string: ?string
        )

        type Declaration (
          key: string,
          type: (bool, int, string, enum),
          # The allowed values of an enum, and of a string when the plugin lists them.
          values: ?[]string,
          default: Value,
          # Whether a value may be set for an item (scope) as well as for the account.
          scoped: bool,
          plugin: string,
          description: string
        )

        type Setting (
          key: string,
          # The item the value was set for; none for the account's own value.
          scope: ?string,
          value: Value,
          # Nothing set: value is the default (version 0).
          isDefault: bool,
          version: int,
          updatedAt: ?string
        )

        # Every key plugins declared, with its type and default.
        method Declared() -> (declarations: []Declaration)

        # The value in effect for the key (for the item, when scope is given).
        method Get(key: string, scope: ?string) -> (setting: Setting)

        # Every declared key's value in effect (for the item, when scope is given).
        method List(scope: ?string) -> (settings: []Setting)

        # Sets the value (checked against the declared type).
        method Set(key: string, scope: ?string, value: Value, expectedVersion: ?int) -> (setting: Setting)

        # Forgets the set value: the account's value (for a scope) or the default applies again.
        method Reset(key: string, scope: ?string, expectedVersion: ?int) -> (setting: Setting)

        # No plugin declared this key.
        # category: invalid
        error UnknownSetting (key: string)
        # category: invalid
        error ValidationFailed (field: string, reason: string)
        # The value changed since the version expected: 'setting' is as it stands.
        # category: conflict
        error Conflict (setting: Setting)

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [Declared.self, Get.self, List.self, Set.self, Reset.self]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = SettingsError
    /// The interface's name, `io.appd.Settings`.
    public static var name: String { Errors.interface }

    public static let needs: [Requirement] = [.session]
    /// Changes keep their first outcome for a retry with the same idempotency key.
    public static let changes: [Requirement] = [.session, .idempotent]

    public struct Declared: Command {
        public static let method = "io.appd.Settings.Declared"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public struct Reply: Codable, Sendable, Equatable {
            public var declarations: [SettingDeclaration]
            public init(declarations: [SettingDeclaration]) { self.declarations = declarations }
        }
        public init() {}
    }
    public struct Get: Command {
        public static let method = "io.appd.Settings.Get"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public typealias Reply = SettingReply
        public var key: String
        public var scope: String?
        public init(key: String, scope: String? = nil) {
            self.key = key
            self.scope = scope
        }
    }
    public struct List: Command {
        public static let method = "io.appd.Settings.List"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public struct Reply: Codable, Sendable, Equatable {
            public var settings: [Setting]
            public init(settings: [Setting]) { self.settings = settings }
        }
        public var scope: String?
        public init(scope: String? = nil) { self.scope = scope }
    }
    public struct Set: Command {
        public static let method = "io.appd.Settings.Set"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = SettingReply
        public var key: String
        public var scope: String?
        public var value: SettingValue
        public var expectedVersion: Int64?
        public init(key: String, scope: String? = nil, value: SettingValue, expectedVersion: Int64? = nil) {
            self.key = key
            self.scope = scope
            self.value = value
            self.expectedVersion = expectedVersion
        }
    }
    public struct Reset: Command {
        public static let method = "io.appd.Settings.Reset"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = SettingReply
        public var key: String
        public var scope: String?
        public var expectedVersion: Int64?
        public init(key: String, scope: String? = nil, expectedVersion: Int64? = nil) {
            self.key = key
            self.scope = scope
            self.expectedVersion = expectedVersion
        }
    }

    public struct SettingReply: Codable, Sendable, Equatable {
        public var setting: Setting
        public init(setting: Setting) { self.setting = setting }
    }
}

/// A value in effect for one key (and item), or the default when nothing was set.
public struct Setting: Codable, Sendable, Equatable {
    public var key: String
    public var scope: String?
    public var value: SettingValue
    public var isDefault: Bool
    public var version: Int64
    public var updatedAt: String?
    public init(key: String, scope: String? = nil, value: SettingValue, isDefault: Bool, version: Int64, updatedAt: String? = nil) {
        self.key = key
        self.scope = scope
        self.value = value
        self.isDefault = isDefault
        self.version = version
        self.updatedAt = updatedAt
    }
}
