// SPDX-License-Identifier: Apache-2.0
import BusCore

struct Introspect: Leaf {
    static let path = ["introspect"]
    static let abstract = "Print the interface definitions (IDL) the daemon serves."
    static let discussion = "With no argument, prints every interface. The IDL is the wire contract of each interface."
    @Argument("interface", optional: true, "One interface: its full name, or its last word (todos).") var interface: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let names: [String]
        if let interface { names = [try Self.resolveInterfaceName(interface, context: context)] } else { names = try context.interfaceNames() }
        var texts: [String] = []
        for name in names {
            texts.append(try context.call(VarlinkServiceInterface.GetInterfaceDescription(interface: name)).description)
        }
        if context.options.json {
            for (name, text) in zip(names, texts) { print(JSONValue.object(["interface": .string(name), "description": .string(text)]).jsonText) }
        } else {
            print(texts.joined(separator: "\n"), terminator: "")
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
