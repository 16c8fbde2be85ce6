// SPDX-License-Identifier: Apache-2.0
/// `@Option("--notes", "text", "Notes for the todo.") var notes: String?`
@propertyWrapper
struct Option: DeclaredParameter {
    let parameter: Parameter
    private let storage = ParsedValues()

    init(_ name: String, _ placeholder: String, _ help: String) {
        parameter = Parameter(name: name, kind: .option(placeholder: placeholder), help: help)
    }

    /// The last value given, or nil.
    var wrappedValue: String? { storage.values.last }
    /// Every value given, in order (a repeatable option: `--header A=1 --header B=2`).
    var projectedValue: [String] { storage.values }
    func take(_ values: [String]) { storage.values = values }
}

/// `@Flag("--open", "(ls) Only open todos.") var open: Bool`
@propertyWrapper
struct Flag: DeclaredParameter {
    let parameter: Parameter
    private let storage = ParsedValues()

    init(_ name: String, _ help: String) {
        parameter = Parameter(name: name, kind: .flag, help: help)
    }

    var wrappedValue: Bool { !storage.values.isEmpty }
    func take(_ values: [String]) { storage.values = values }
}

/// `@Argument("id", "The todo's id (any unique prefix).") var id: String?` — one word. Its
/// presence is checked by the command, which says what is missing in its own words.
@propertyWrapper
struct Argument: DeclaredParameter {
    let parameter: Parameter
    private let storage = ParsedValues()

    init(_ name: String, optional: Bool = false, _ help: String) {
        parameter = Parameter(name: name, kind: .argument(many: false, optional: optional), help: help)
    }

    var wrappedValue: String? { storage.values.first }
    func take(_ values: [String]) { storage.values = values }
}

/// `@Arguments("title", "The todo's title (the words are joined).") var title: [String]` — the
/// rest of the words.
@propertyWrapper
struct Arguments: DeclaredParameter {
    let parameter: Parameter
    private let storage = ParsedValues()

    init(_ name: String, optional: Bool = false, _ help: String) {
        parameter = Parameter(name: name, kind: .argument(many: true, optional: optional), help: help)
    }

    var wrappedValue: [String] { storage.values }
    func take(_ values: [String]) { storage.values = values }
}
