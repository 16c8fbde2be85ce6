// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PluginsRescan: Leaf {
    static let path = ["plugins", "rescan"]
    static let abstract = "Pick up new plugin folders, drop removed ones, restart changed ones (admin)."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        if context.options.json {
            context.output.reply(try context.json(DaemonInterface.RescanPlugins()))
            return ExitCode.ok
        }
        let reply = try context.call(DaemonInterface.RescanPlugins())
        func names(_ list: [String]) -> String { list.isEmpty ? "none" : list.joined(separator: ", ") }
        let read = reply.directories.map { directory -> String in
            let path = directory.path.escapingControlCharacters()
            return directory.exists ? "\(path) (\(directory.folders) folder(s))" : "\(path) (missing)"
        }
        print("scanned: \(read.isEmpty ? "none" : read.joined(separator: ", "))")
        print("added: \(names(reply.added))\nremoved: \(names(reply.removed))\nchanged: \(names(reply.changed))")
        for entry in reply.skipped {
            print("skipped: \(entry.folder): \(entry.reason)".escapingControlCharacters())
        }
        return ExitCode.ok
    }
}
