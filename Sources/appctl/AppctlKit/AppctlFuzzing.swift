// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// appctl's argument parsers without a daemon: the global options, a builtin's flags, and the
/// flags derived from an IDL method. For the fuzzers and tests; throws the usage error a user
/// would see.
public enum AppctlFuzzing {
    /// Parses `arguments` as appctl would up to the point of calling the daemon.
    static func parse<L: Leaf>(_ leaf: L.Type, _ words: [String]) throws(AppctlError) { _ = try L.parse(words) }

    public static func parse(_ arguments: [String], against interface: VarlinkInterface) throws -> [String: JSONValue] {
        let (options, rest) = try GlobalOptions.extract(from: arguments, reserved: TodosGroup.group.reserved)
        _ = options.socketPath
        if let (verb, words) = TodosGroup.group.verb(in: rest), let leaf = TodosGroup.group.leaf(verb) { try parse(leaf, words) }
        // The webhook's declared parser as a user reaches it, and its NAME=VALUE header parsing.
        if let webhook = try? PaymentsWebhook.parse(rest) { _ = try PaymentsWebhook.headers(webhook.$header) }
        _ = try PaymentsWebhook.headers(rest.filter { $0.contains("=") })
        guard let name = rest.first, let method = interface.methods.first(where: { DerivedCommand.kebab($0.name) == name }) else { return [:] }
        return try DerivedCommand.parseFields(Array(rest.dropFirst()), for: method, in: interface, command: "fuzz")
    }
}
