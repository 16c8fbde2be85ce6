// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

/// `appctl settings` (list), `settings get KEY`, `settings set KEY VALUE`, `settings reset KEY`.
/// Any other word goes to the commands derived from `io.appd.Settings`.
enum SettingsGroup {
    static let group = CommandGroup(
        name: "settings", abstract: "Your settings: list, get, set, reset.",
        discussion: """
            With no subcommand: every setting with its value (* marks a default). Plugins declare the keys (appctl settings declared shows their types and defaults); \
            --scope sets a value for one item, such as chat.style for one conversation.
            set takes the value as JSON when it is JSON (true, 14, "text"), else as text. With --expected-version, a value changed since is refused as a conflict (exit \
            code 1): 0 means never set.
            Needs 'appctl login'.
            """,
        leaves: [SettingsGet.self, SettingsSet.self, SettingsReset.self], fallback: SettingsList.self, derived: true)

    /// One line per setting: key, value, version, * for a default.
    static func show(_ setting: Setting, _ context: Context) {
        if context.options.json {
            print(((try? JSONValue(encoding: setting)) ?? .null).jsonText)
        } else {
            let scope = setting.scope.map { " [\($0)]" } ?? ""
            print("\(setting.key)\(scope) = \(setting.value.json.jsonText)\(setting.isDefault ? " *" : "") (version \(setting.version))".escapingControlCharacters())
        }
    }

    static func expected(_ text: String?, _ command: String) throws(AppctlError) -> Int64? {
        guard let text else { return nil }
        guard let version = Int64(text), version >= 0 else { throw .usage("--expected-version needs a version number (0: never set)", command: command) }
        return version
    }
}
