#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Varlink

/// appctl: find the subcommand, run it, turn the outcome into an exit code. The executable
/// (Sources/appctl/Main) only calls `main()`; the fuzzers call the argument parsers here.
public enum Appctl {
    static let builtins: [Builtin] = [
        DaemonCommands.ping, DaemonCommands.status, DaemonCommands.plugins, DaemonCommands.info, DaemonCommands.introspect,
        DaemonCommands.shutdown, AuthCommands.signup, AuthCommands.login, AuthCommands.logout, AuthCommands.whoami,
        AuthCommands.onboard, TodosCommand.command, PaymentsCommand.command, ChatCommand.command, RatingCommand.command, CallCommand.command, EventsCommand.command, BenchCommand.command,
        CompletionCommand.command,
    ]

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
        if let command = builtins.first(where: { $0.name == name }) {
            let (options, rest) = try GlobalOptions.extract(from: before + after, reserved: command.reserved)
            if options.help {
                print(command.help, terminator: "")
                return ExitCode.ok
            }
            return try command.run(rest, Context(options: options))
        }
        // Not built in: an interface of the daemon.
        if let near = Suggestions.closest(to: name, in: builtins.map(\.name) + ["help"]), Suggestions.distance(name, near) <= 1 {
            throw .usage("unknown subcommand '\(name)'\nDid you mean '\(near)'?", command: nil)
        }
        // Global options win over a method field of the same name; `appctl call` reaches those.
        let (options, rest) = try GlobalOptions.extract(from: before + after)
        return try DerivedCommand.run(interfaceWord: name, rest, options: options)
    }

    static func help(_ words: [String], options: GlobalOptions) throws(AppctlError) -> Int32 {
        guard let first = words.first else {
            print(overview, terminator: "")
            return ExitCode.ok
        }
        if let command = builtins.first(where: { $0.name == first }) {
            print(command.help, terminator: "")
            return ExitCode.ok
        }
        return try DerivedCommand.run(interfaceWord: first, Array(words.dropFirst()), options: options)
    }

    static var overview: String {
        var text = """
            OVERVIEW: Control and script appd over its Unix socket (varlink).

            USAGE: appctl [--socket <path>] [--json] [--timeout <seconds>] <subcommand>

            OPTIONS:

            """
        text += GlobalOptions.help + "\n  --version               Show the version.\n"
        text += "\nSUBCOMMANDS:\n"
        for command in builtins { text += Help.row(command.name, command.abstract) }
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
            let usage = command.map { name in builtins.first { $0.name == name }?.usage ?? "\(name) [--<field> <value> ...]" }
                ?? "<subcommand> [<options>]"
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
