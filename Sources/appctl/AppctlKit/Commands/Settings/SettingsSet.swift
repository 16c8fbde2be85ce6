// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct SettingsSet: Leaf {
    static let path = ["settings", "set"]
    static let abstract = "Set one of your settings."
    @Argument("key", "The setting, e.g. chat.memory.") var key: String?
    @Argument("value", "The value: JSON (true, 14, \"text\") or else text.") var value: String?
    @Option("--scope", "id", "Set it for this item only.") var scope: String?
    @Option("--expected-version", "n", "Refuse if the value changed since this version (0: never set).") var expectedVersion: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let key, let value else { throw .usage("settings set needs a key and a value", command: Self.command) }
        // JSON when it is a JSON bool, number or string; else the text as it is.
        let parsed = (try? JSONParser.parse(Array(value.utf8))).flatMap(SettingValue.init(json:)) ?? SettingValue(string: value)
        let set = SettingsInterface.Set(key: key, scope: scope, value: parsed, expectedVersion: try SettingsGroup.expected(expectedVersion, Self.command))
        SettingsGroup.show(try context.call(set).setting, context)
        return ExitCode.ok
    }
}
