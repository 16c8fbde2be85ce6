// SPDX-License-Identifier: Apache-2.0
/// One command of appctl that runs something: declared as a type whose `@Option`, `@Flag`,
/// `@Argument` and `@Arguments` properties are its command line. Its usage line and help are
/// generated from them; the parser fills them in before `run`.
///
/// ```swift
/// struct TodosAdd: Leaf {
///     static let path = ["todos", "add"]
///     static let abstract = "Add a todo."
///     @Arguments("title", "The title (the words are joined).") var title: [String]
///     @Option("--notes", "text", "Notes for the todo.") var notes: String?
///     func run(_ context: Context) throws(AppctlError) -> Int32 { … }
/// }
/// ```
/// Its metatype crosses threads (the command table is Sendable): `SendableMetatype`.
protocol Leaf: SendableMetatype {
    /// The words that reach it: `["todos", "add"]`, or `["ping"]`.
    static var path: [String] { get }
    static var abstract: String { get }
    /// Paragraphs after the overview in its help.
    static var discussion: String { get }
    init()
    func run(_ context: Context) throws(AppctlError) -> Int32
}

extension Leaf {
    static var discussion: String { "" }

    /// The words as typed: `todos add`.
    static var command: String { path.joined(separator: " ") }

    /// Its declared parameters, in declaration order.
    static var parameters: [Parameter] { Self().declared.map(\.parameter) }

    var declared: [any DeclaredParameter] { Mirror(reflecting: self).children.compactMap { $0.value as? any DeclaredParameter } }

    /// `todos add <title>... [--notes <text>] [--due <time>]`: arguments, then options.
    static var usage: String {
        let parameters = Self.parameters
        let arguments = parameters.filter { if case .argument = $0.kind { true } else { false } }
        let options = parameters.filter { if case .argument = $0.kind { false } else { true } }
        return ([command] + arguments.map(\.usage) + options.map(\.usage)).joined(separator: " ")
    }

    static var help: String {
        var text = "OVERVIEW: \(abstract)\n"
        if !discussion.isEmpty { text += "\n\(discussion)\n" }
        text += "\nUSAGE: appctl \(usage)\n"
        let arguments = parameters.filter { if case .argument = $0.kind { true } else { false } }
        if !arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            for argument in arguments { text += argument.helpText + "\n" }
        }
        text += "\nOPTIONS:\n"
        for option in parameters where !arguments.contains(option) { text += option.helpText + "\n" }
        text += GlobalOptions.help + "\n"
        return text
    }

    /// The command with `arguments` (global options already taken out) parsed into it.
    static func parse(_ arguments: [String]) throws(AppctlError) -> Self {
        let command = Self()
        let declared = command.declared
        var valued: Set<String> = [], switches: Set<String> = []
        for parameter in declared.map(\.parameter) {
            switch parameter.kind {
            case .option: valued.insert(parameter.name)
            case .flag: switches.insert(parameter.name)
            case .argument: break
            }
        }
        let flags = try Flags(arguments, valued: valued, switchFlags: switches, command: self.command)
        var words = flags.positionals[...]
        for item in declared {
            switch item.parameter.kind {
            case .option: item.take(flags.values[item.parameter.name] ?? [])
            case .flag: item.take(flags.switches.contains(item.parameter.name) ? ["true"] : [])
            case .argument(let many, _):
                if many {
                    item.take(Array(words))
                    words = []
                } else if let word = words.popFirst() {
                    item.take([word])
                }
            }
        }
        if let extra = words.first {
            let takes = declared.contains { if case .argument = $0.parameter.kind { true } else { false } } ? "nothing more" : "no arguments"
            throw .usage("\(self.command) takes \(takes); '\(extra)' is one too many", command: self.command)
        }
        return command
    }

    /// The option names it parses itself (the global options leave them alone).
    static var reserved: Set<String> {
        Set(parameters.compactMap { if case .argument = $0.kind { nil } else { $0.name } })
    }
}
