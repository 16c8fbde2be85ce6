// SPDX-License-Identifier: Apache-2.0
import Contracts

struct SettingsGet: Leaf {
    static let path = ["settings", "get"]
    static let abstract = "Print one setting's value in effect."
    @Argument("key", "The setting, e.g. chat.memory.") var key: String?
    @Option("--scope", "id", "The value for this item (else the account's).") var scope: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let key else { throw .usage("settings get needs a key", command: Self.command) }
        SettingsGroup.show(try context.call(SettingsInterface.Get(key: key, scope: scope)).setting, context)
        return ExitCode.ok
    }
}
