// SPDX-License-Identifier: Apache-2.0
/// The errors of one interface as one enum: each case is an error its IDL declares, named as
/// the error in lower camel case, with the error's parameters as labelled associated values.
///
/// ```swift
/// public enum TodosError: InterfaceError {
///     public static let interface = "io.appd.Todos"
///     case notFound                      // io.appd.Todos.NotFound ()
///     case quotaExceeded(limit: Int)     // io.appd.Todos.QuotaExceeded (limit: int)
/// }
/// ```
///
/// The case renders itself to the wire and back through its synthesized `Codable` form, which
/// is `{"quotaExceeded": {"limit": 3}}`: the one key is the error's name, its object the
/// parameters. So the server throws it, a client catches it, and neither writes a name string.
public protocol InterfaceError: WireError, Codable, Equatable {
    /// The interface the errors belong to, e.g. `io.appd.Todos`.
    static var interface: String { get }
}

extension InterfaceError {
    public var wireName: String { wire.name }
    public var wireParameters: [String: JSONValue] { wire.parameters }

    /// The fully qualified name and the parameters, from one encoding of the case.
    public var wire: (name: String, parameters: [String: JSONValue]) {
        let (name, parameters) = wireCase
        return ("\(Self.interface).\(name)", parameters)
    }

    /// The error named `wireName` (fully qualified) with `parameters`; nil when the name is
    /// not one of this interface's errors, or the parameters are not the error's.
    public init?(wireName: String, parameters: [String: JSONValue]) {
        let prefix = Self.interface + "."
        guard wireName.hasPrefix(prefix) else { return nil }
        let name = wireName.dropFirst(prefix.count)
        guard let first = name.first, first.isUppercase, !name.contains(".") else { return nil }
        let key = first.lowercased() + name.dropFirst()
        guard let value = try? JSONValue.object([key: .object(parameters)]).decode(as: Self.self) else { return nil }
        self = value
    }

    /// The case's name on the wire (`QuotaExceeded`) and its parameters.
    private var wireCase: (name: String, parameters: [String: JSONValue]) {
        guard case .object(let object)? = try? JSONValue(encoding: self), object.count == 1, let (key, value) = object.first,
            let first = key.first
        else { return ("InternalError", [:]) }
        let parameters: [String: JSONValue]
        if case .object(let fields) = value { parameters = fields } else { parameters = [:] }
        return (first.uppercased() + key.dropFirst(), parameters)
    }
}
