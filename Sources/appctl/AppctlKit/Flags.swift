// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// A parsed list of `--flag value` / `--flag` / positional arguments for built-in commands.
struct Flags {
    var values: [String: [String]] = [:]
    var switches: Set<String> = []
    var positionals: [String] = []

    /// Parses `arguments` against the options a command accepts: `valued` take a value, `switchFlags`
    /// take none; anything else starting with `-` is a usage error with a suggestion.
    init(_ arguments: [String], valued: Set<String>, switchFlags: Set<String>, command: String) throws(AppctlError) {
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
}
