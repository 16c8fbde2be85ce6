import BusCore
import Varlink

/// One option the flag parser accepts (with a value when it has a placeholder); the declared
/// commands' `@Option` and `@Flag` become these.
struct CommandOption: Sendable, Hashable {
    /// `--notes`, `-c`.
    let name: String
    /// The value's placeholder (`text` shows as `<text>`); nil for a switch.
    let value: String?
    /// One line, or several separated by newlines.
    let help: String

    init(_ name: String, value: String? = nil, _ help: String) {
        self.name = name
        self.value = value
        self.help = help
    }

    /// The help line, in the columns of the global options.
    var helpText: String {
        let label = value.map { "\(name) <\($0)>" } ?? name
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        let indent = String(repeating: " ", count: 26)
        let first = "  " + label + String(repeating: " ", count: max(1, 24 - label.count)) + (lines.first.map(String.init) ?? "")
        return ([first] + lines.dropFirst().map { indent + $0 }).joined(separator: "\n")
    }
}

/// A parsed list of `--flag value` / `--flag` / positional arguments for built-in commands.
struct Flags {
    var values: [String: [String]] = [:]
    var switches: Set<String> = []
    var positionals: [String] = []

    /// Parses `arguments` against the options a verb accepts (those with a placeholder take a
    /// value); anything else starting with `-` is a usage error with a suggestion.
    init(_ arguments: [String], accepting options: [CommandOption] = [], command: String) throws(AppctlError) {
        try self.init(
            arguments, valued: Set(options.filter { $0.value != nil }.map(\.name)), switchFlags: Set(options.filter { $0.value == nil }.map(\.name)),
            command: command)
    }

    private init(_ arguments: [String], valued: Set<String>, switchFlags: Set<String>, command: String) throws(AppctlError) {
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            let (flag, inline) = GlobalOptions.splitFlag(argument)
            if valued.contains(flag) {
                if let inline {
                    values[flag, default: []].append(inline)
                } else {
                    guard index < arguments.count else { throw .usage("\(flag) needs a value", command: command) }
                    values[flag, default: []].append(arguments[index])
                    index += 1
                }
            } else if switchFlags.contains(flag) && inline == nil {
                switches.insert(flag)
            } else {
                throw .usage(
                    "unknown option '\(flag)'" + Suggestions.hint(for: flag, in: Array(valued) + Array(switchFlags) + GlobalOptions.names),
                    command: command)
            }
        }
    }

    func value(_ flag: String) -> String? { values[flag]?.last }

    /// Refuses words past the first `allowed` (a verb, say): nothing is silently ignored.
    func noMoreArguments(than allowed: Int = 0, in command: String) throws(AppctlError) {
        guard positionals.count > allowed else { return }
        throw .usage("\(command) takes \(allowed == 0 ? "no arguments" : "nothing after it"); '\(positionals[allowed])' is one too many", command: command.split(separator: " ").first.map(String.init))
    }
}
