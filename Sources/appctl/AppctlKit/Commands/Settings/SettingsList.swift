// SPDX-License-Identifier: Apache-2.0
import Contracts

struct SettingsList: Leaf {
    static let path = ["settings"]
    static let abstract = "List your settings with their values (* marks a default)."
    @Option("--scope", "id", "The values for this item (its scoped settings only).") var scope: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        for setting in try context.call(SettingsInterface.List(scope: scope)).settings { SettingsGroup.show(setting, context) }
        return ExitCode.ok
    }
}
