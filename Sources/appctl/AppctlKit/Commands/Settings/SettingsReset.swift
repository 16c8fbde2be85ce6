// SPDX-License-Identifier: Apache-2.0
import Contracts

struct SettingsReset: Leaf {
    static let path = ["settings", "reset"]
    static let abstract = "Forget a value you set: the default (or for an item, the account's value) applies again."
    @Argument("key", "The setting, e.g. chat.memory.") var key: String?
    @Option("--scope", "id", "Reset the value for this item only.") var scope: String?
    @Option("--expected-version", "n", "Refuse if the value changed since this version.") var expectedVersion: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let key else { throw .usage("settings reset needs a key", command: Self.command) }
        let reset = SettingsInterface.Reset(key: key, scope: scope, expectedVersion: try SettingsGroup.expected(expectedVersion, Self.command))
        SettingsGroup.show(try context.call(reset).setting, context)
        return ExitCode.ok
    }
}
