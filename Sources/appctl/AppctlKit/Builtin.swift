import Bus

/// A hand-written subcommand with its help text.
struct Builtin: Sendable {
    let name: String
    let abstract: String
    let usage: String
    var discussion: String = ""
    var options: String = ""
    /// Flags the command parses itself (kept away from the global options).
    var reserved: Set<String> = []
    let run: @Sendable (_ arguments: [String], _ context: Context) throws(AppctlError) -> Int32

    var help: String {
        var text = "OVERVIEW: \(abstract)\n"
        if !discussion.isEmpty { text += "\n\(discussion)\n" }
        text += "\nUSAGE: appctl \(usage)\n"
        text += "\nOPTIONS:\n"
        if !options.isEmpty { text += options + "\n" }
        text += GlobalOptions.help + "\n"
        return text
    }
}

/// A parsed list of `--flag value` / `--flag` / positional arguments for built-in commands.
struct Flags {
    var values: [String: [String]] = [:]
    var switches: Set<String> = []
    var positionals: [String] = []

    /// Parses `arguments`: `valued` flags take a value, `switchFlags` none; anything else
    /// starting with `-` is a usage error with a suggestion.
    init(_ arguments: [String], valued: Set<String> = [], switchFlags: Set<String> = [], command: String) throws(AppctlError) {
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
