// SPDX-License-Identifier: Apache-2.0
/// What the parser, the usage line and the help know of one declared option, flag or
/// argument of a command.
struct Parameter: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// `--notes <text>`; given again, the last value wins (`$option` has them all).
        case option(placeholder: String)
        /// `--open`.
        case flag
        /// A word in order; `many` takes the rest (`todos add <title>...`).
        case argument(many: Bool, optional: Bool)
    }

    /// `--notes`, or an argument's name (`title`).
    let name: String
    let kind: Kind
    /// One line, or several separated by newlines.
    let help: String

    /// How the usage line shows it: `<id>`, `[<query>...]`, `[--notes <text>]`, `[--open]`.
    var usage: String {
        switch kind {
        case .option(let placeholder): "[\(name) <\(placeholder)>]"
        case .flag: "[\(name)]"
        case .argument(let many, let optional):
            (optional ? "[" : "") + "<\(name)>" + (many ? "..." : "") + (optional ? "]" : "")
        }
    }

    /// The help row, in the columns of the global options.
    var helpText: String {
        let label: String =
            switch kind {
            case .option(let placeholder): "\(name) <\(placeholder)>"
            case .flag: name
            case .argument: "<\(name)>"
            }
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        let indent = String(repeating: " ", count: 26)
        let first = "  " + label + String(repeating: " ", count: max(1, 24 - label.count)) + (lines.first.map(String.init) ?? "")
        return ([first] + lines.dropFirst().map { indent + $0 }).joined(separator: "\n")
    }
}

/// A property wrapper the parser fills: it declares itself and takes its values.
protocol DeclaredParameter {
    var parameter: Parameter { get }
    /// Every value given (an option's, each occurrence), `["true"]` for a flag given, or the
    /// argument's words.
    func take(_ values: [String])
}

/// The storage behind a wrapper: the command is a value, its parsed values live here.
final class ParsedValues {
    var values: [String] = []
}
