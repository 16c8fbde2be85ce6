// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Varlink

/// appctl: find the subcommand, run it, turn the outcome into an exit code. The executable
/// (Sources/appctl/Main) only calls `main()`; the fuzzers call the argument parsers here.
public enum Appctl {
    /// Every command, as `appctl --help` lists them; each a declared type (Commands/).
    static let tree: [CommandNode] = [
        .leaf(Ping.self), .leaf(Status.self), .group(PluginsGroup.group), .leaf(Info.self), .leaf(Introspect.self), .leaf(Shutdown.self),
        .leaf(Signup.self), .leaf(Login.self), .leaf(Logout.self), .leaf(WhoAmI.self), .leaf(Onboard.self), .group(TodosGroup.group),
        .group(PaymentsGroup.group), .group(ChatGroup.group), .group(FilesGroup.group), .group(RatingGroup.group), .group(SettingsGroup.group), .group(ConsoleGroup.group),
        .leaf(Call.self), .group(EventsGroup.group),
        .leaf(Bench.self), .leaf(Completion.self),
    ]

    static func node(_ name: String) -> CommandNode? { tree.first { $0.name == name } }

    public static func main() {
        // A parent may hand us a blocked signal mask (spawned from a thread that blocks them):
        // Ctrl-C and SIGTERM must always end appctl.
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        exit(run(Array(CommandLine.arguments.dropFirst())))
    }

    static func run(_ arguments: [String]) -> Int32 {
        do {
            return try dispatch(arguments)
        } catch {
            // (Before `--`, `--json` asks for machine output of errors too.)
            return report(error, json: arguments.prefix { $0 != "--" }.contains("--json"))
        }
    }

    static func dispatch(_ arguments: [String]) throws(AppctlError) -> Int32 {
        // The subcommand is the first word that is not a global option (or its value).
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if GlobalOptions.valued.contains(word) { index += 2; continue }
            if word.hasPrefix("-") { index += 1; continue }
            break
        }
        guard index < arguments.count else {
            let (options, rest) = try GlobalOptions.extract(from: arguments)
            if let stray = rest.first { throw .usage("unknown option '\(stray)'" + Suggestions.hint(for: stray, in: GlobalOptions.names + ["--version"]), command: nil) }
            if arguments.contains("--version") { print("appctl \(Version.current)"); return ExitCode.ok }
            _ = options
            print(overview, terminator: "")
            return ExitCode.ok
        }
        let name = arguments[index]
        let before = Array(arguments[..<index])
        let after = Array(arguments[(index + 1)...])

        if name == "help" {
            var (options, rest) = try GlobalOptions.extract(from: before + after)
            options.help = true
            return try help(rest, options: options)
        }
        switch node(name) {
        case .leaf(let leaf)?:
            let (options, rest) = try GlobalOptions.extract(from: before + after, reserved: leaf.reserved)
            if options.help {
                print(leaf.help, terminator: "")
                return ExitCode.ok
            }
            return try runLeaf(leaf, rest, options: options)
        case .group(let group)?:
            let (options, rest) = try GlobalOptions.extract(from: before + after, reserved: group.reserved)
            return try run(group, rest, options: options)
        case nil:
            break
        }
        // Not built in: an interface of the daemon.
        if let near = Suggestions.closest(to: name, in: tree.map(\.name) + ["help"]), Suggestions.distance(name, near) <= 1 {
            throw .usage("unknown subcommand '\(name)'\nDid you mean '\(near)'?", command: nil)
        }
        // Global options win over a method field of the same name; `appctl call` reaches those.
        let (options, rest) = try GlobalOptions.extract(from: before + after)
        return try DerivedCommand.run(interfaceWord: name, rest, options: options)
    }

    /// A group's verb (or its fallback, or a derived command of its interface), with `--help`
    /// answered by the verb's help or the group's.
    static func run(_ group: CommandGroup, _ arguments: [String], options: GlobalOptions) throws(AppctlError) -> Int32 {
        let found = group.verb(in: arguments)
        if let (verb, rest) = found, let leaf = group.leaf(verb) {
            if options.help {
                print(leaf.help, terminator: "")
                return ExitCode.ok
            }
            return try runLeaf(leaf, rest, options: options)
        }
        if found != nil, group.derived {
            // Another word: a method of the group's interface (its --help describes the method).
            return try DerivedCommand.run(interfaceWord: group.name, arguments, options: options)
        }
        if options.help {
            print(group.help, terminator: "")
            return ExitCode.ok
        }
        if let (verb, _) = found {
            let verbs = group.leaves.compactMap { $0.path.last }
            throw .usage("\(group.name) takes \(verbs.joined(separator: ", "))" + Suggestions.hint(for: verb, in: verbs), command: group.name)
        }
        guard let fallback = group.fallback else {
            let verbs = group.leaves.compactMap { $0.path.last }
            throw .usage("\(group.name) needs a subcommand: \(verbs.joined(separator: ", "))", command: group.name)
        }
        return try runLeaf(fallback, arguments, options: options)
    }

    /// Parses the leaf's command line into a new instance and runs it.
    static func runLeaf<L: Leaf>(_ leaf: L.Type, _ arguments: [String], options: GlobalOptions) throws(AppctlError) -> Int32 {
        try L.parse(arguments).run(Context(options: options))
    }

    static func help(_ words: [String], options: GlobalOptions) throws(AppctlError) -> Int32 {
        guard let first = words.first else {
            print(overview, terminator: "")
            return ExitCode.ok
        }
        switch node(first) {
        case .leaf(let leaf)?:
            print(leaf.help, terminator: "")
            return ExitCode.ok
        case .group(let group)?:
            return try run(group, Array(words.dropFirst()), options: options)
        case nil:
            return try DerivedCommand.run(interfaceWord: first, Array(words.dropFirst()), options: options)
        }
    }

    /// The usage line of a command path (`todos add`), a group, or nil.
    static func usage(of command: String) -> String? {
        let words = command.split(separator: " ").map(String.init)
        guard let first = words.first else { return nil }
        switch node(first) {
        case .leaf(let leaf)?: return leaf.usage
        case .group(let group)?:
            if words.count > 1, let leaf = group.leaf(words[1]) { return leaf.usage }
            return "\(group.name) \(group.fallback == nil ? "<subcommand>" : "[<subcommand>]") [<options>]"
        case nil: return nil
        }
    }

    static var overview: String {
        var text = """
            OVERVIEW: Control and script appd over its Unix socket (varlink).

            USAGE: appctl [--socket <path>] [--json] [--timeout <seconds>] <subcommand>

            OPTIONS:

            """
        text += GlobalOptions.help + "\n  --version               Show the version.\n"
        text += "\nSUBCOMMANDS:\n"
        for command in tree { text += Help.row(command.name, command.abstract) }
        text += Help.row("help", "Show help for a subcommand.")
        text += Help.row("<interface> <method>", "Call a method of any served interface: appctl daemon status")
        text += "\n  See 'appctl help <subcommand>' for detailed help.\n\n"
        text += ExitCode.table + "\n"
        return text
    }

    /// Prints the error the way the user needs it and returns the exit code.
    static func report(_ error: AppctlError, json: Bool = false) -> Int32 {
        if json, case .daemon(let reply) = error {
            // Scripts get the reply itself, and the sentence, as one JSON object on stderr.
            let object: JSONValue = ["error": .string(reply.error ?? "error"), "parameters": reply.parameters, "message": .string(ErrorMessage.sentence(reply))]
            StandardError.write(object.jsonText + "\n")
            return error.exitCode
        }
        switch error {
        case .usage(let message, let command):
            let usage = command.map { name in Self.usage(of: name) ?? "\(name) [--<field> <value> ...]" } ?? "<subcommand> [<options>]"
            StandardError.write("Error: \(message)\nUsage: appctl \(usage)\n  See 'appctl \(command.map { "help \($0)" } ?? "--help")' for more information.\n")
        case .unreachable(let cause, let socket):
            switch cause {
            case .cannotConnect:
                StandardError.write(
                    "Error: appd is not running, or not on \(socket) (\(cause)).\n"
                        + "Start it with 'appd' (or 'systemctl start appd'), or point appctl at it with --socket or APPD_SOCKET.\n")
            default:
                StandardError.write("Error: \(cause) (socket \(socket)).\n")
            }
        case .untrustedServer(let uid, let socket):
            StandardError.write(
                "Error: refusing to talk to the process listening on \(socket): it runs as \(uid.map { "uid \($0)" } ?? "an unknown user"), "
                    + "not as you (uid \(getuid())) or root, so it may not be appd. Nothing was sent.\n"
                    + "If it is the appd you mean, pass --expect-uid \(uid.map(String.init) ?? "UID").\n")
        case .daemon(let reply):
            StandardError.write("Error: \(ErrorMessage.sentence(reply)) (\(reply.error ?? "error"))\n")
        }
        return error.exitCode
    }
}
