import Bus

/// `ping`, `status`, `shutdown`, `info`, `introspect`.
enum DaemonCommands {
    static let ping = Builtin(
        name: "ping", abstract: "Check that appd is running and answering.", usage: "ping",
        discussion: "Prints 'pong' and exits 0 when the daemon answers; exits 2 when it cannot be reached."
    ) { arguments, context throws(AppctlError) in
        _ = try Flags(arguments, command: "ping")
        let reply = try context.call("io.appd.Daemon.Ping")
        if context.options.json { context.output.reply(reply) } else { print("pong") }
        return ExitCode.ok
    }

    static let status = Builtin(
        name: "status", abstract: "Show what the daemon is doing: version, uptime, connections, plugins, bus.",
        usage: "status"
    ) { arguments, context throws(AppctlError) in
        _ = try Flags(arguments, command: "status")
        let reply = try context.call("io.appd.Daemon.Status")
        context.output.reply(reply, order: ["version", "pid", "uptimeSeconds", "connections", "plugins", "bus"])
        return ExitCode.ok
    }

    static let shutdown = Builtin(
        name: "shutdown", abstract: "Stop the daemon gracefully (admin).", usage: "shutdown",
        discussion: "In-flight calls finish first; appd then exits 0. Needs the daemon's uid, root or the admin group."
    ) { arguments, context throws(AppctlError) in
        _ = try Flags(arguments, command: "shutdown")
        let reply = try context.call("io.appd.Daemon.Shutdown")
        if context.options.json { context.output.reply(reply) } else { print("appd is shutting down") }
        return ExitCode.ok
    }

    static let info = Builtin(
        name: "info", abstract: "Show the daemon's vendor, version and interfaces (org.varlink.service.GetInfo).",
        usage: "info"
    ) { arguments, context throws(AppctlError) in
        _ = try Flags(arguments, command: "info")
        let reply = try context.call("org.varlink.service.GetInfo")
        context.output.reply(reply, order: ["vendor", "product", "version", "url", "interfaces"])
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
