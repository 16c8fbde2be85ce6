// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The events the settings plugin publishes.
public enum SettingsEvents {
    public static let all: [any Event.Type] = [SettingChanged.self]
}

/// One of the user's settings was set or reset (its value and version as they now stand).
public struct SettingChanged: OwnedEvent, Equatable {
    public static let topic = "settings.changed"
    public var userId: String
    public var setting: Setting
    public init(userId: String, setting: Setting) {
        self.userId = userId
        self.setting = setting
    }
}
