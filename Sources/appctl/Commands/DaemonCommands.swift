import Bus

/// `ping`, `status`, `shutdown`, `info`, `introspect`.
enum DaemonCommands {
    /// A command that takes no arguments and calls one method: prints `message` when given
    /// (and not --json), else the reply with its fields in `order`.
    static func simple(
        _ name: String, abstract: String, discussion: String = "", method: String, message: String? = nil,
        order: [String] = []
    ) -> Builtin {
        Builtin(name: name, abstract: abstract, usage: name, discussion: discussion) { arguments, context throws(AppctlError) in
            _ = try Flags(arguments, command: name)
            let reply = try context.call(method)
            if let message, !context.options.json { print(message) } else { context.output.reply(reply, order: order) }
            return ExitCode.ok
        }
    }

    static let ping = simple(
        "ping", abstract: "Check that appd is running and answering.",
        discussion: "Prints 'pong' and exits 0 when the daemon answers; exits 2 when it cannot be reached.",
        method: "io.appd.Daemon.Ping", message: "pong")

    static let status = simple(
        "status", abstract: "Show what the daemon is doing: version, uptime, connections, plugins, bus.",
        method: "io.appd.Daemon.Status", order: ["version", "pid", "uptimeSeconds", "connections", "plugins", "bus", "eventLog"])

    static let shutdown = simple(
        "shutdown", abstract: "Stop the daemon gracefully (admin).",
        discussion: "In-flight calls finish first; appd then exits 0. Needs the daemon's uid, root or the admin group.",
        method: "io.appd.Daemon.Shutdown", message: "appd is shutting down")

    static let info = simple(
        "info", abstract: "Show the daemon's vendor, version and interfaces (org.varlink.service.GetInfo).",
        method: "org.varlink.service.GetInfo", order: ["vendor", "product", "version", "url", "interfaces"])

    static let plugins = Builtin(
        name: "plugins", abstract: "List the plugins with their state, version, restarts and last error.", usage: "plugins"
    ) { arguments, context throws(AppctlError) in
        _ = try Flags(arguments, command: "plugins")
        let reply = try context.call("io.appd.Daemon.Plugins")
        if context.options.json {
            context.output.reply(reply)
        } else if case .array(let list)? = reply["plugins"], !list.isEmpty {
            print(Output.table(list.compactMap(\.objectValue), order: ["name", "version", "state", "restarts", "lastError"]), terminator: "")
        } else {
            print("no plugins installed")
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
        var texts: [JSONValue] = []
        for name in names {
            let description = try context.call("org.varlink.service.GetInterfaceDescription", ["interface": .string(name)])
            texts.append(description["description"] ?? "")
        }
        if context.options.json {
            for (name, text) in zip(names, texts) { print(JSONValue.object(["interface": .string(name), "description": text]).jsonText) }
        } else {
            print(texts.compactMap(\.stringValue).joined(separator: "\n"), terminator: "")
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
