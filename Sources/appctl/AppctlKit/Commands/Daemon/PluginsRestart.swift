// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PluginsRestart: Leaf {
    static let path = ["plugins", "restart"]
    static let abstract = "Drain an external plugin's calls, then restart it (admin)."
    @Argument("name", "The plugin's name (appctl plugins lists them).") var name: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let name else { throw .usage("plugins restart needs one plugin name", command: Self.command) }
        let reply = try context.json(DaemonInterface.RestartPlugin(name: name))
        if context.options.json { context.output.reply(reply) } else { print("restarted \(name)") }
        return ExitCode.ok
    }
}
