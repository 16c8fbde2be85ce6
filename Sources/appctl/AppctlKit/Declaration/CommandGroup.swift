// SPDX-License-Identifier: Apache-2.0
/// A word of appctl with verbs under it (`todos add`, `todos ls`, …): each verb a `Leaf`. With
/// no verb, its `fallback` runs (`plugins` lists them, `chat` is interactive); any other word
/// goes to the commands derived from its interface when `derived` is set (`appctl todos get --id …`).
struct CommandGroup: Sendable {
    let name: String
    let abstract: String
    var discussion: String = ""
    let leaves: [any Leaf.Type]
    /// The leaf run when no verb is given (its path is the group's own word).
    var fallback: (any Leaf.Type)? = nil
    /// Whether other words are methods of the served interface of that name.
    var derived = false

    /// Every option a verb takes, so that the global options leave them alone.
    var reserved: Set<String> { leaves.reduce(into: fallback?.reserved ?? []) { $0.formUnion($1.reserved) } }

    /// The verb in `arguments` (the first word that is neither an option nor an option's value).
    func verb(in arguments: [String]) -> (verb: String, rest: [String])? {
        let valued = Set(
            ([fallback].compactMap { $0 } + leaves).flatMap { leaf in
                leaf.parameters.compactMap { if case .option = $0.kind { $0.name } else { nil } }
            })
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" { return nil }
            if valued.contains(word) { index += 2; continue }
            if word.hasPrefix("-") { index += 1; continue }
            var rest = arguments
            rest.remove(at: index)
            return (word, rest)
        }
        return nil
    }

    func leaf(_ verb: String) -> (any Leaf.Type)? { leaves.first { $0.path.last == verb } }

    var help: String {
        var text = "OVERVIEW: \(abstract)\n"
        if !discussion.isEmpty { text += "\n\(discussion)\n" }
        let verbs = leaves.map { $0.path.last ?? "" }
        text += "\nUSAGE: appctl \(name) \(fallback == nil ? "<subcommand>" : "[<subcommand>]") [<options>]\n"
        if let fallback {
            text += "       appctl \(fallback.usage)\n"
        }
        text += "\nSUBCOMMANDS:\n"
        for (verb, leaf) in zip(verbs, leaves) { text += Help.row(verb, leaf.abstract) }
        if derived { text += Help.row("<method>", "Any other method of the interface: 'appctl \(name) <method> --help' shows its fields.") }
        text += "\n  See 'appctl \(name) <subcommand> --help' for detailed help.\n"
        text += "\nOPTIONS:\n" + GlobalOptions.help + "\n"
        return text
    }
}

/// One word at the top of appctl: a command, or a group of them.
enum CommandNode: Sendable {
    case leaf(any Leaf.Type)
    case group(CommandGroup)

    var name: String {
        switch self {
        case .leaf(let leaf): leaf.path[0]
        case .group(let group): group.name
        }
    }

    var abstract: String {
        switch self {
        case .leaf(let leaf): leaf.abstract
        case .group(let group): group.abstract
        }
    }
}
