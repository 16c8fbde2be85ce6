import BusCore
import Contracts
import Varlink

/// `ping`, `status`, `shutdown`, `info`, `introspect`.
enum DaemonCommands {
    /// A command that takes no arguments and calls one method: prints `message` when given
    /// (and not --json), else the reply with its fields in `order`.
    static func simple(
        _ name: String, abstract: String, discussion: String = "", method: String, message: String? = nil,
        order: [String] = []
    ) -> Builtin {
        Builtin(name: name, abstract: abstract, usage: name, discussion: discussion) { arguments, context throws(AppctlError) in
            let flags = try Flags(arguments, command: name)
            // Extra words are an error, as extra options are: nothing is silently ignored.
            if let extra = flags.positionals.first { throw .usage("\(name) takes no arguments; '\(extra)' is one too many", command: name) }
            var reply = try context.call(method)
            if let message, !context.options.json {
                print(message)
                return ExitCode.ok
            }
            if !context.options.json, case .object(var members) = reply {
                // People read durations, not float seconds.
                if case .double(let seconds)? = members["uptimeSeconds"] {
                    members["uptimeSeconds"] = nil
                    members["uptime"] = .string(Output.duration(seconds))
                }
                reply = .object(members)
            }
            context.output.reply(reply, order: order)
            return ExitCode.ok
        }
    }

    static let ping = simple(
        "ping", abstract: "Check that appd is running and answering.",
        discussion: "Prints 'pong' and exits 0 when the daemon answers; exits 2 when it cannot be reached.",
        method: DaemonInterface.Ping.method, message: "pong")

    static let status = simple(
        "status", abstract: "Show what the daemon is doing: version, uptime, connections, plugins, bus.",
        method: DaemonInterface.Status.method, order: ["version", "pid", "uptime", "connections", "plugins", "bus", "eventLog", "paths"])

    static let shutdown = simple(
        "shutdown", abstract: "Stop the daemon gracefully (admin).",
        discussion: "In-flight calls finish first; appd then exits 0. Needs the daemon's uid, root or the admin group.",
        method: DaemonInterface.Shutdown.method, message: "appd is shutting down")

    static let info = simple(
        "info", abstract: "Show the daemon's vendor, version and interfaces (org.varlink.service.GetInfo).",
        method: VarlinkServiceInterface.GetInfo.method, order: ["vendor", "product", "version", "url", "interfaces"])

    static let plugins = Builtin(
        name: "plugins", abstract: "List the plugins (state, pid, restarts, interfaces, last error); restart, enable, disable, rescan external ones.",
        usage: "plugins [restart NAME | enable NAME | disable NAME | rescan]",
        discussion: """
            External plugins are folders with a plugin.json in the plugin directories (see docs/plugins.md). restart drains the plugin's calls in flight, then restarts it; enable and disable are kept across restarts of appd; rescan picks up new folders and drops removed ones. These four are admin only.
            """
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, command: "plugins")
        let verb = flags.positionals.first
        switch verb {
        case nil:
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
        case "restart", "enable", "disable":
            guard flags.positionals.count == 2 else { throw .usage("plugins \(verb ?? "") needs one plugin name", command: "plugins") }
            let name = flags.positionals[1]
            let reply =
                verb == "restart"
                ? try context.json(DaemonInterface.RestartPlugin(name: name))
                : verb == "enable" ? try context.json(DaemonInterface.EnablePlugin(name: name)) : try context.json(DaemonInterface.DisablePlugin(name: name))
            if context.options.json { context.output.reply(reply) } else { print("\(verb == "restart" ? "restarted" : verb == "enable" ? "enabled" : "disabled") \(flags.positionals[1])") }
        case "rescan":
            try flags.noMoreArguments(than: 1, in: "plugins rescan")
            if context.options.json {
                context.output.reply(try context.json(DaemonInterface.RescanPlugins()))
            } else {
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
            }
        default:
            throw .usage("plugins takes restart, enable, disable or rescan" + Suggestions.hint(for: verb ?? "", in: ["restart", "enable", "disable", "rescan"]), command: "plugins")
        }
        return ExitCode.ok
    }

    static let introspect = Builtin(
        name: "introspect", abstract: "Print the interface definitions (IDL) the daemon serves.",
        usage: "introspect [<interface>]",
        discussion: "With no argument, prints every interface. The IDL is the wire contract of each interface."
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, command: "introspect")
        guard flags.positionals.count <= 1 else { throw .usage("introspect takes at most one interface", command: "introspect") }
        let names: [String]
        if let word = flags.positionals.first {
            names = [try resolveInterfaceName(word, context: context)]
        } else {
            names = try context.interfaceNames()
        }
        var texts: [String] = []
        for name in names {
            texts.append(try context.call(VarlinkServiceInterface.GetInterfaceDescription(interface: name)).description)
        }
        if context.options.json {
            for (name, text) in zip(names, texts) { print(JSONValue.object(["interface": .string(name), "description": .string(text)]).jsonText) }
        } else {
            print(texts.joined(separator: "\n"), terminator: "")
        }
        return ExitCode.ok
    }

    /// `daemon` → `io.appd.Daemon`; full names pass through when served.
    static func resolveInterfaceName(_ word: String, context: Context, alsoSuggest: [String] = []) throws(AppctlError) -> String {
        let names = try context.interfaceNames()
        if names.contains(word) { return word }
        if let match = names.first(where: { shortName($0) == word.lowercased() }) { return match }
        throw .usage(
            "unknown subcommand or interface '\(word)'" + Suggestions.hint(for: word, in: alsoSuggest + names.map(shortName)),
            command: nil)
    }

    /// The last label of an interface name, lower-cased: `io.appd.Todos` → `todos`.
    static func shortName(_ interface: String) -> String {
        String(interface.split(separator: ".").last ?? Substring(interface)).lowercased()
    }
}
