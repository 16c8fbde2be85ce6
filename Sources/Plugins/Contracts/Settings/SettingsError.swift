// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The typed errors of `io.appd.Settings`.
public enum SettingsError: InterfaceError {
    public static let interface = "io.appd.Settings"

    case unknownSetting(key: String)
    case validationFailed(field: String, reason: String)
    /// The value changed since the version expected: the value as it stands.
    case conflict(setting: Setting)

    public static func validation(_ field: String, _ reason: String) -> SettingsError { .validationFailed(field: field, reason: reason) }

    public var description: String {
        switch self {
        case .unknownSetting(let key): "no plugin declares the setting '\(key)'; Settings.Declared lists those there are"
        case .validationFailed(let field, let reason): "\(field): \(reason)"
        case .conflict(let setting): "the setting changed since (it is at version \(setting.version) now); look at it and decide again"
        }
    }
}
