// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PluginsDisable: Leaf {
    static let path = ["plugins", "disable"]
    static let abstract = "Stop an external plugin, and keep it stopped across restarts of appd (admin)."
    @Argument("name", "The plugin's name (appctl plugins lists them).") var name: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let name else { throw .usage("plugins disable needs one plugin name", command: Self.command) }
        let reply = try context.json(DaemonInterface.DisablePlugin(name: name))
        if context.options.json { context.output.reply(reply) } else { print("disabled \(name)") }
        return ExitCode.ok
    }
}
