// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct PluginsList: Leaf {
    static let path = ["plugins"]
    static let abstract = "List the plugins: state, pid, restarts, interfaces, last error."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let reply = try context.json(DaemonInterface.Plugins())
        if context.options.json {
            context.output.reply(reply)
        } else if let list = try? reply.decode(as: DaemonInterface.PluginsReply.self).plugins, !list.isEmpty {
            // The table shows each plugin as it came, its interfaces on one line.
            let rows = list.compactMap { plugin -> [String: JSONValue]? in
                var row = (try? JSONValue(encoding: plugin))?.objectValue
                row?["interfaces"] = .string(plugin.interfaces.joined(separator: ","))
                return row
            }
            print(Output.table(rows, order: Output.columns["plugins"] ?? []), terminator: "")
        } else {
            print("no plugins installed")
        }
        return ExitCode.ok
    }
}
