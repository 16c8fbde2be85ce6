// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Contracts
import Varlink

/// `appctl <interface> <method> --field value …` for every interface the daemon serves:
/// flags typed by the IDL, help from its doc comments. A new plugin needs no appctl change.
enum DerivedCommand {
    /// Kebab-case of a member name: `SignUp` → `sign-up`.
    static func kebab(_ name: String) -> String {
        var out = ""
        for (i, ch) in name.enumerated() {
            if ch.isUppercase && i > 0 { out += "-" }
            out += ch.lowercased()
        }
        return out
    }

    static func squash(_ word: String) -> String { word.lowercased().filter { $0 != "-" && $0 != "_" } }

    static func run(interfaceWord: String, _ arguments: [String], options: GlobalOptions) throws(AppctlError) -> Int32 {
        let context = Context(options: options)
        let name = try Introspect.resolveInterfaceName(
            interfaceWord, context: context, alsoSuggest: Appctl.tree.map(\.name))
        let interface = try context.interface(name)
        let short = Introspect.shortName(name)
        guard let methodWord = arguments.first, !methodWord.hasPrefix("-") else {
            if options.help {
                print(interfaceHelp(interface, short: short), terminator: "")
                return ExitCode.ok
            }
            throw .usage("\(short) needs a method: \(interface.methods.map { kebab($0.name) }.joined(separator: ", "))", command: short)
        }
        let wanted = Self.aliases[name]?[squash(methodWord)] ?? methodWord
        guard let method = interface.methods.first(where: { squash($0.name) == squash(wanted) }) else {
            throw .usage(
                "\(short) has no method '\(methodWord)'" + Suggestions.hint(for: methodWord, in: interface.methods.map { kebab($0.name) }),
                command: short)
        }
        if options.help {
            print(methodHelp(method, in: interface, short: short), terminator: "")
            return ExitCode.ok
        }
        let parameters = try parseFields(Array(arguments.dropFirst()), for: method, in: interface, command: "\(short) \(kebab(method.name))")
        let qualified = "\(name).\(method.name)"
        let order = method.output.map(\.name)
        do {
            let reply = try context.call(qualified, .object(parameters))
            // A reply with nothing in it says nothing to a person: say what happened instead.
            if !context.output.json, let said = Self.done(qualified, reply) ?? Self.summary(qualified, reply) {
                print(said)
            } else {
                context.output.reply(reply, order: order)
            }
        } catch .daemon(let reply) where reply.error == "org.varlink.service.ExpectedMore" {
            try context.stream(qualified, .object(parameters)) { reply, _ in context.output.reply(reply, order: order) }
        }
        return ExitCode.ok
    }

    /// What to tell a person when a method's reply carries nothing to show (every field empty
    /// or null); nil when the reply has something to show.
    static func done(_ method: String, _ reply: JSONValue) -> String? {
        guard case .object(let members) = reply, members.values.allSatisfy({ $0 == .null }) else { return nil }
        return Self.said[method] ?? "done."
    }

    /// A sentence for a reply a person reads better as one: what `backup verify` checked.
    static func summary(_ method: String, _ reply: JSONValue) -> String? {
        guard method == BackupInterface.Verify.method, let backup = reply["backup"], let path = backup["path"]?.stringValue,
            case .int(let files)? = reply["files"], case .int(let bytes)? = backup["bytes"], case .int(let seq)? = backup["lastSeq"]
        else { return nil }
        let integrity = reply["integrity"]?.stringValue ?? "?"
        return "verified \(path.escapingControlCharacters()): \(files) files, \(bytes) bytes, each matching its SHA-256; "
            + "database integrity \(integrity.escapingControlCharacters()); events up to #\(seq); "
            + "made \(backup["createdAt"]?.stringValue ?? "?") by appd \(backup["appdVersion"]?.stringValue ?? "?")"
    }

    /// Whether `field` sets a new password (asked twice at a terminal): `newPassword`, or the
    /// password of a method that makes or upgrades an account.
    static func setsPassword(_ field: VarlinkField, of method: String) -> Bool {
        field.name == "newPassword" || (field.name == "password" && [AuthInterface.SignUp.method, AuthInterface.UpgradeGuest.method].contains(method))
    }

    /// Shorter words for some methods: `appctl auth identities` is `appctl auth list-identities`.
    static let aliases: [String: [String: String]] = [
        AuthInterface.name: [
            "identities": AuthInterface.ListIdentities.name, "link": AuthInterface.LinkIdentity.name, "unlink": AuthInterface.UnlinkIdentity.name,
            "guest": AuthInterface.SignInAnonymously.name,
        ]
    ]

    static let said: [String: String] = [
        AuthInterface.VerifyEmail.method: "Email verified.",
        AuthInterface.RequestEmailVerification.method:
            "If an unverified account has that address, a verification mail is on its way (appd says the same either way).",
        AuthInterface.UnlinkIdentity.method: "Unlinked.",
        AuthInterface.RequestPasswordReset.method: "If an account has that address, a reset mail is on its way (appd says the same either way).",
        AuthInterface.ResetPassword.method: "Password changed; every session of the account was ended: sign in again with 'appctl login'.",
        AuthInterface.ChangePassword.method: "Password changed; every other session of the account was ended.",
        BusContract.Publish.method: "Published (live only: not in the event log; --durable logs it).",
        AuthInterface.SignOut.method: "Signed out.",
        AuthInterface.SignOutEverywhere.method: "Signed out everywhere: every session of the account was ended.",
    ]

    /// Flags of the method's input fields, typed by the IDL.
    static func parseFields(
        _ arguments: [String], for method: VarlinkMethod, in interface: VarlinkInterface, command: String
    ) throws(AppctlError) -> [String: JSONValue] {
        var values: [String: JSONValue] = [:]
        var index = 0
        let fields = method.input.filter { !$0.isFilledInByAppd }
        // Password fields are never needed on the command line (where `ps` shows them): when
        // left out they are prompted for without echo, or read from standard input.
        let secrets = fields.filter { $0.type == .string && $0.name.lowercased().hasSuffix("password") }
        var secretsFromStdin = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--password-stdin", !secrets.isEmpty {
                secretsFromStdin = true
                continue
            }
            guard argument.hasPrefix("--") else {
                throw .usage("unexpected argument '\(argument)'; pass fields as --name value", command: command)
            }
            let (flag, inline) = GlobalOptions.splitFlag(argument)
            let word = String(flag.dropFirst(2))
            if method.input.contains(where: { $0.isFilledInByAppd && squash($0.name) == squash(word) }) {
                throw .usage("\(flag) is filled in by appd with who is calling; leave it out", command: command)
            }
            guard let field = fields.first(where: { squash($0.name) == squash(word) }) else {
                throw .usage(
                    "unknown option '\(flag)'" + Suggestions.hint(for: flag, in: fields.map { "--" + kebab($0.name) } + GlobalOptions.names),
                    command: command)
            }
            let type = resolve(field.type, in: interface)
            let isBool = type == .bool || type == .optional(.bool)
            let text: String
            if let inline {
                text = inline
            } else if isBool {
                text = "true"
            } else {
                guard index < arguments.count else { throw .usage("\(flag) needs a value", command: command) }
                text = arguments[index]
                index += 1
            }
            let value = try parse(text, as: type, flag: flag, interface: interface, command: command)
            switch (type, values[field.name]) {
            case (.array, .array(let existing)?):
                if case .array(let more) = value { values[field.name] = .array(existing + more) }
            case (.map, .object(let existing)?):
                if case .object(let more) = value { values[field.name] = .object(existing.merging(more) { $1 }) }
            case (.optional(.array), .array(let existing)?):
                if case .array(let more) = value { values[field.name] = .array(existing + more) }
            default:
                values[field.name] = value
            }
        }
        let missingSecrets = secrets.filter { values[$0.name] == nil }
        if !missingSecrets.isEmpty && (secretsFromStdin || isatty(0) == 1) {
            if secretsFromStdin {
                // One line each, in the order of the fields.
                let lines = String(decoding: readStandardInput(), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                for (i, field) in missingSecrets.enumerated() where i < lines.count { values[field.name] = .string(String(lines[i])) }
            } else {
                for field in missingSecrets {
                    let words = kebab(field.name).split(separator: "-").joined(separator: " ")
                    let prompt = words.prefix(1).uppercased() + words.dropFirst() + ": "
                    let typed = try PasswordInput.read(prompt: prompt, fromStandardInput: false, command: command)
                    // A password being set is asked twice: a typo would lock the owner out.
                    if Self.setsPassword(field, of: "\(interface.name).\(method.name)") {
                        let again = try PasswordInput.read(prompt: "Again: ", fromStandardInput: false, command: command)
                        guard again == typed else { throw .usage("the two passwords differ; nothing was changed", command: command) }
                    }
                    values[field.name] = .string(typed)
                }
            }
        }
        for field in fields where !field.type.isOptional && values[field.name] == nil {
            let hint = secrets.contains(field) ? " (or leave it out to be prompted, or pass --password-stdin)" : ""
            throw .usage("missing --\(kebab(field.name)) <\(field.type)>\(hint)", command: command)
        }
        return values
    }

    /// Follows named types to what they stand for, keeping optionality.
    static func resolve(_ type: VarlinkType, in interface: VarlinkInterface) -> VarlinkType {
        switch type {
        case .named(let name): interface.type(name).map { resolve($0.type, in: interface) } ?? type
        case .optional(let inner): .optional(resolve(inner, in: interface))
        default: type
        }
    }

    static func parse(
        _ text: String, as type: VarlinkType, flag: String, interface: VarlinkInterface, command: String
    ) throws(AppctlError) -> JSONValue {
        func bad(_ what: String) -> AppctlError { .usage("\(flag) needs \(what), not '\(text)'", command: command) }
        switch resolve(type, in: interface) {
        case .optional(let inner):
            return try parse(text, as: inner, flag: flag, interface: interface, command: command)
        case .string: return .string(text)
        case .int:
            guard let n = Int64(text) else { throw bad("a whole number") }
            return .int(n)
        case .float:
            guard let d = Double(text), d.isFinite else { throw bad("a number") }
            return .double(d)
        case .bool:
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: throw bad("true or false")
            }
        case .enumeration(let cases):
            guard cases.contains(text) else { throw bad("one of \(cases.joined(separator: ", "))") }
            return .string(text)
        case .array(let element):
            if text.hasPrefix("["), let json = try? JSONParser.parse(Array(text.utf8)) { return json }
            return .array([try parse(text, as: element, flag: flag, interface: interface, command: command)])
        case .map(let element):
            guard let eq = text.firstIndex(of: "=") else { throw bad("key=value") }
            let value = try parse(String(text[text.index(after: eq)...]), as: element, flag: flag, interface: interface, command: command)
            return .object([String(text[..<eq]): value])
        case .object, .structure, .named:
            guard let json = try? JSONParser.parse(Array(text.utf8)) else { throw bad("JSON") }
            return json
        }
    }

    static func interfaceHelp(_ interface: VarlinkInterface, short: String) -> String {
        var text = "OVERVIEW: \(interface.doc.isEmpty ? interface.name : interface.doc)\n\n"
        text += "USAGE: appctl \(short) <method> [--<field> <value> ...]\n\nMETHODS:\n"
        for method in interface.methods {
            text += Help.row(kebab(method.name), Help.firstSentence(method.doc))
        }
        text += "\n  See 'appctl \(short) <method> --help' for a method's fields.\n"
        return text
    }

    static func methodHelp(_ method: VarlinkMethod, in interface: VarlinkInterface, short: String) -> String {
        var text = "OVERVIEW: \(method.doc.isEmpty ? "\(interface.name).\(method.name)" : method.doc)\n\n"
        let fields = method.input.filter { !$0.isFilledInByAppd }
        let flags = fields.map { field in
            field.type.isOptional ? "[--\(kebab(field.name)) <\(placeholder(field.type))>]" : "--\(kebab(field.name)) <\(placeholder(field.type))>"
        }
        text += "USAGE: appctl \(short) \(kebab(method.name))\(flags.isEmpty ? "" : " " + flags.joined(separator: " "))\n"
        if !fields.isEmpty {
            text += "\nFIELDS:\n"
            for field in fields {
                var doc = field.doc.replacingNewlines()
                if field.type.isOptional { doc = doc.isEmpty ? "(optional)" : "\(doc) (optional)" }
                text += Help.row("--\(kebab(field.name)) <\(placeholder(field.type))>", doc)
            }
        }
        if !method.output.isEmpty {
            text += "\nREPLY:\n"
            for field in method.output { text += Help.row(field.name, "\(field.type)") }
        }
        text += "\nOPTIONS:\n" + GlobalOptions.help + "\n"
        return text
    }

    static func placeholder(_ type: VarlinkType) -> String {
        switch type {
        case .optional(let inner): placeholder(inner)
        case .array(let inner): placeholder(inner) + " ..."
        case .map: "key=value"
        case .enumeration(let cases): cases.joined(separator: "|")
        case .structure, .object: "json"
        default: "\(type)"
        }
    }
}

extension String {
    func replacingNewlines() -> String { split(separator: "\n").joined(separator: " ") }
}
