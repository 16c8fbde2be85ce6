// SPDX-License-Identifier: Apache-2.0
extension VarlinkInterface {
    /// Checks call parameters against a method's input before anything decodes them.
    /// Throws `InvalidParameters` naming the first missing, unknown or mistyped field.
    public func validateInput(of method: VarlinkMethod, _ parameters: JSONValue, qualifiedName: String) throws(InvalidParameters) {
        let object: JSONValue = parameters == .null ? .object([:]) : parameters
        // The fields checked directly: `.structure(method.input)` would box a new indirect case
        // on every call.
        if let problem = check(object, fields: method.input, path: "") {
            throw InvalidParameters(method: qualifiedName, parameter: problem.path, reason: problem.reason)
        }
    }

    package struct Problem {
        package let path: String
        package let reason: String
    }

    /// The first place where `value` does not fit `type`, or nil when it fits.
    package func check(_ value: JSONValue, against type: VarlinkType, path: String) -> Problem? {
        func mismatch() -> Problem { Problem(path: path, reason: "expected \(type), got \(value.kindName)") }
        func join(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
        switch type {
        case .bool:
            if case .bool = value { return nil }
            return mismatch()
        case .int:
            if case .int = value { return nil }
            return mismatch()
        case .float:
            switch value {
            case .int, .double: return nil
            default: return mismatch()
            }
        case .string:
            if case .string = value { return nil }
            return mismatch()
        case .object:
            return nil
        case .optional(let inner):
            if value == .null { return nil }
            return check(value, against: inner, path: path)
        case .array(let inner):
            guard case .array(let elements) = value else { return mismatch() }
            for (i, element) in elements.enumerated() {
                if let problem = check(element, against: inner, path: join(String(i))) { return problem }
            }
            return nil
        case .map(let inner):
            guard case .object(let members) = value else { return mismatch() }
            for (key, member) in members {
                if let problem = check(member, against: inner, path: join(key)) { return problem }
            }
            return nil
        case .named(let name):
            guard let definition = self.type(name) else { return Problem(path: path, reason: "undefined type \(name)") }
            return check(value, against: definition.type, path: path)
        case .enumeration(let values):
            guard case .string(let s) = value, values.contains(s) else {
                return Problem(path: path, reason: "expected one of \(values.joined(separator: ", "))")
            }
            return nil
        case .structure(let fields):
            return check(value, fields: fields, path: path)
        }
    }

    /// The first place where `value` does not fit a structure of `fields`, or nil when it fits.
    private func check(_ value: JSONValue, fields: [VarlinkField], path: String) -> Problem? {
        func join(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
        guard case .object(let members) = value else {
            return Problem(path: path, reason: "expected \(VarlinkType.structure(fields)), got \(value.kindName)")
        }
        for key in members.keys where !fields.contains(where: { $0.name == key }) {
            return Problem(path: join(key), reason: "unknown field")
        }
        for field in fields {
            guard let member = members[field.name] else {
                if field.type.isOptional { continue }
                return Problem(path: join(field.name), reason: "missing")
            }
            if let problem = check(member, against: field.type, path: join(field.name)) { return problem }
        }
        return nil
    }
}
