// SPDX-License-Identifier: Apache-2.0
import BusCore

/// An in-process bus command the settings plugin serves (it is in no IDL, so no client can
/// call it): the value of one of a user's settings in effect (for an item, with `scope`), the
/// declared default when nothing is set. Chat reads memory on/off and the preferred model this
/// way, without reaching into the settings tables.
public struct ReadSetting: Command {
    public static let method = "io.appd.Settings.ReadSetting"
    public typealias Reply = Value

    public var userID: String
    public var key: String
    public var scope: String?

    public init(userID: String, key: String, scope: String? = nil) {
        self.userID = userID
        self.key = key
        self.scope = scope
    }

    public struct Value: Codable, Sendable, Equatable {
        public var value: SettingValue
        public init(value: SettingValue) { self.value = value }
    }
}
