// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PluginsEnable: Leaf {
    static let path = ["plugins", "enable"]
    static let abstract = "Start a disabled external plugin, and keep it enabled (admin)."
    @Argument("name", "The plugin's name (appctl plugins lists them).") var name: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let name else { throw .usage("plugins enable needs one plugin name", command: Self.command) }
        let reply = try context.json(DaemonInterface.EnablePlugin(name: name))
        if context.options.json { context.output.reply(reply) } else { print("enabled \(name)") }
        return ExitCode.ok
    }
}
