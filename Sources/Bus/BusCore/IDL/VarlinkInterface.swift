// SPDX-License-Identifier: Apache-2.0
/// A type in a varlink interface definition.
public indirect enum VarlinkType: Hashable, Sendable, CustomStringConvertible {
    case bool, int, float, string, object
    case optional(VarlinkType)
    case array(VarlinkType)
    /// `[string]T`: a JSON object with values of T.
    case map(VarlinkType)
    /// A type defined with `type Name …` in the same interface.
    case named(String)
    case structure([VarlinkField])
    case enumeration([String])

    public var description: String {
        switch self {
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .string: "string"
        case .object: "object"
        case .optional(let t): "?\(t)"
        case .array(let t): "[]\(t)"
        case .map(let t): "[string]\(t)"
        case .named(let n): n
        case .structure(let fields): "(" + fields.map { "\($0.name): \($0.type)" }.joined(separator: ", ") + ")"
        case .enumeration(let values): "(" + values.joined(separator: ", ") + ")"
        }
    }

    public var isOptional: Bool {
        if case .optional = self { return true }
        return false
    }
}

/// A named field of a struct, with the doc comment written above it.
public struct VarlinkField: Hashable, Sendable {
    public let name: String
    public let type: VarlinkType
    public let doc: String

    /// `caller: ?Caller` of an external plugin's method: appd fills it in with who is calling,
    /// and refuses it from a client, so clients are never offered it.
    public var isFilledInByAppd: Bool { name == "caller" && type == .optional(.named("Caller")) }

    public init(name: String, type: VarlinkType, doc: String = "") {
        self.name = name
        self.type = type
        self.doc = doc
    }
}

public struct VarlinkMethod: Hashable, Sendable {
    public let name: String
    public let input: [VarlinkField]
    public let output: [VarlinkField]
    public let doc: String
}

public struct VarlinkErrorDefinition: Hashable, Sendable {
    public let name: String
    public let fields: [VarlinkField]
    public let doc: String
    /// What kind of failure it is (its doc's `category:` line); nil when the IDL says nothing.
    public let category: ErrorCategory?
}

public struct VarlinkTypeDefinition: Hashable, Sendable {
    public let name: String
    public let type: VarlinkType
    public let doc: String
}

/// A parsed varlink interface. `text` is the wire contract, served verbatim by
/// `GetInterfaceDescription`. Immutable, and a class so that every call checked against it
/// shares it instead of copying its tables.
public final class VarlinkInterface: Sendable {
    public let name: String
    public let doc: String
    public let text: String
    public let types: [VarlinkTypeDefinition]
    public let methods: [VarlinkMethod]
    public let errors: [VarlinkErrorDefinition]
    /// `methods` by name: every call looks its method up.
    private let methodsByName: [String: VarlinkMethod]

    public func method(_ name: String) -> VarlinkMethod? { methodsByName[name] }
    public func type(_ name: String) -> VarlinkTypeDefinition? { types.first { $0.name == name } }
    public func error(_ name: String) -> VarlinkErrorDefinition? { errors.first { $0.name == name } }

    /// How much of the varlink grammar an interface may use.
    public enum Grammar: Sendable {
        /// The subset every known varlink parser accepts (systemd's and Python's): what appd
        /// serves itself and asks of plugins, so every client works with every interface.
        case portable
        /// Everything varlink.org's grammar allows (nested containers, one-value enums), for
        /// services that must speak an interface defined elsewhere (`org.varlink.certification`).
        case complete
    }

    /// Parses IDL text and checks it: by default against the subset every known varlink
    /// parser accepts.
    public init(parsing text: String, grammar: Grammar = .portable) throws(VarlinkIDLError) {
        var parser = VarlinkIDLParser(text: text)
        let parsed = try parser.parseInterface()
        self.name = parsed.name
        self.doc = parsed.doc
        self.text = text
        self.types = parsed.types
        self.methods = parsed.methods
        self.methodsByName = Dictionary(parsed.methods.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.errors = parsed.errors
        try lint(grammar)
    }
}

/// Why an interface definition was refused, with the line it was found on.
public struct VarlinkIDLError: Error, Equatable, CustomStringConvertible {
    public let line: Int
    public let reason: String
    public var description: String { "interface definition, line \(line): \(reason)" }
}
