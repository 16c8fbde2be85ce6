// SPDX-License-Identifier: Apache-2.0
extension VarlinkInterface {
    /// Refuses what systemd's or Python varlink's parser would refuse, so every interface appd
    /// serves works with every client: LF line endings, ≥ 2-label interface names whose first
    /// label is letters only, member and field names of the right shape, enums with ≥ 2 values,
    /// no nested containers, every named type defined, no duplicate names.
    func lint(_ grammar: Grammar) throws(VarlinkIDLError) {
        func fail(_ reason: String) -> VarlinkIDLError { VarlinkIDLError(line: 0, reason: reason) }

        if text.utf8.contains(UInt8(ascii: "\r")) { throw fail("use LF line endings, not CR LF") }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else {
            throw fail("interface name '\(name)' needs at least two dot-separated labels")
        }
        guard labels[0].allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw fail("the first label of '\(name)' must be letters only")
        }
        for label in labels
        where !label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
            || label.hasPrefix("-") || label.hasSuffix("-")
        {
            throw fail("interface label '\(label)' may hold letters, digits and inner '-'")
        }

        var seen = Set<String>()
        let memberNames = types.map(\.name) + methods.map(\.name) + errors.map(\.name)
        for member in memberNames {
            guard Self.isMemberName(member) else {
                throw fail("'\(member)' must start with an upper-case letter and hold letters and digits")
            }
            guard seen.insert(member).inserted else { throw fail("'\(member)' is defined twice") }
        }
        let defined = Set(types.map(\.name))
        for type in types { try check(type.type, in: type.name, defined: defined, grammar) }
        for method in methods {
            try check(.structure(method.input), in: method.name, defined: defined, grammar)
            try check(.structure(method.output), in: method.name, defined: defined, grammar)
        }
        for error in errors { try check(.structure(error.fields), in: error.name, defined: defined, grammar) }
    }

    private func check(_ type: VarlinkType, in owner: String, defined: Set<String>, _ grammar: Grammar) throws(VarlinkIDLError) {
        func fail(_ reason: String) -> VarlinkIDLError { VarlinkIDLError(line: 0, reason: "\(owner): \(reason)") }
        switch type {
        case .bool, .int, .float, .string, .object: return
        case .named(let name):
            guard defined.contains(name) else { throw fail("type '\(name)' is not defined") }
        case .optional(let inner):
            if case .optional = inner { throw fail("'??' is not allowed") }
            try check(inner, in: owner, defined: defined, grammar)
        case .array(let inner), .map(let inner):
            switch (inner, grammar) {
            case (.optional, .portable), (.array, .portable), (.map, .portable):
                throw fail("nested containers ('\(type)') are not portable")
            default: try check(inner, in: owner, defined: defined, grammar)
            }
        case .structure(let fields):
            var names = Set<String>()
            for field in fields {
                guard Self.isFieldName(field.name) else { throw fail("'\(field.name)' is not a valid field name") }
                guard names.insert(field.name).inserted else { throw fail("field '\(field.name)' appears twice") }
                try check(field.type, in: owner, defined: defined, grammar)
            }
        case .enumeration(let values):
            guard values.count >= 2 || grammar == .complete else { throw fail("an enum needs at least two values (for portability)") }
            guard !values.isEmpty else { throw fail("an enum needs a value") }
            guard Set(values).count == values.count else { throw fail("an enum value appears twice") }
            for value in values where !Self.isFieldName(value) { throw fail("'\(value)' is not a valid enum value") }
        }
    }

    static func isMemberName(_ name: String) -> Bool {
        guard let first = name.first, first.isASCII, first.isUppercase else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// `[A-Za-z](_?[A-Za-z0-9])*`
    static func isFieldName(_ name: String) -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter, !name.hasSuffix("_"), !name.contains("__") else {
            return false
        }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
    }
}
