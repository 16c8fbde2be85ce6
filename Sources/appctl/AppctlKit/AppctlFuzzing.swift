import BusCore
import Varlink

/// appctl's argument parsers without a daemon: the global options, a builtin's flags, and the
/// flags derived from an IDL method. For the fuzzers and tests; throws the usage error a user
/// would see.
public enum AppctlFuzzing {
    /// Parses `arguments` as appctl would up to the point of calling the daemon.
    public static func parse(_ arguments: [String], against interface: VarlinkInterface) throws -> [String: JSONValue] {
        let (options, rest) = try GlobalOptions.extract(from: arguments, reserved: TodosCommand.command.reserved)
        _ = options.socketPath
        _ = try Flags(rest, accepting: TodosCommand.command.options + [PaymentsCommand.header], command: "fuzz")
        guard let name = rest.first, let method = interface.methods.first(where: { DerivedCommand.kebab($0.name) == name }) else { return [:] }
        return try DerivedCommand.parseFields(Array(rest.dropFirst()), for: method, in: interface, command: "fuzz")
    }
}
