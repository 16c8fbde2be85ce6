// SPDX-License-Identifier: Apache-2.0
/// Whether Swift types say what the interface declares: the check that keeps a contract's
/// types and its IDL text one definition. Each difference is named: the method or error, the
/// field, what the IDL says and what the type says.
extension VarlinkInterface {
    /// How a command type and its reply differ from the method's declared input and output.
    public func differences<Input: Decodable, Reply: Decodable>(method name: String, input: Input.Type, reply: Reply.Type) -> [String] {
        let short = name.methodNameParts.map { String($0.member) } ?? name
        guard let method = method(short) else { return ["\(name): the IDL declares no such method"] }
        var found: [String] = []
        for (side, declared, type) in [("parameters", method.input, Input.self as any Decodable.Type), ("reply", method.output, Reply.self)] {
            do {
                let reflected = try reflect(type)
                // appd fills in `caller` itself; a command need not carry it.
                let fields = declared.filter { !$0.isFilledInByAppd }
                found += differences(declared: .structure(fields), reflected: reflected, at: "\(name) \(side)")
            } catch {
                found.append("\(name) \(side): \(error)")
            }
        }
        return found
    }

    /// How an error enum's cases differ from the declared errors: every declared error must be a
    /// case with exactly its parameters. (A case the IDL lacks is refused on the wire at run
    /// time: the dispatcher checks every error a handler throws.)
    public func differences<E: InterfaceError>(errors type: E.Type) -> [String] {
        guard E.interface == self.name else { return ["\(E.self) is for \(E.interface), not \(self.name)"] }
        var found: [String] = []
        for error in errors {
            let caseName = error.name.prefix(1).lowercased() + error.name.dropFirst()
            do {
                let fields = try PayloadReflector.fields(of: E.self, case: caseName)
                found += differences(declared: .structure(error.fields), reflected: .structure(fields), at: "\(name).\(error.name)")
            } catch let failure {
                found.append("\(name).\(error.name): \(E.self) has no case \(caseName) with its parameters (\(failure))")
            }
        }
        return found
    }

    private func reflect(_ type: any Decodable.Type) throws -> VarlinkType {
        func open<T: Decodable>(_ t: T.Type) throws -> VarlinkType { try PayloadReflector.parameters(of: t) }
        return try open(type)
    }

    /// Differences between a declared type (named types resolved in this interface) and a
    /// reflected one.
    private func differences(declared: VarlinkType, reflected: VarlinkType, at path: String) -> [String] {
        switch (declared, reflected) {
        case (.named(let name), _):
            guard let definition = type(name) else { return ["\(path): the IDL names an unknown type \(name)"] }
            return differences(declared: definition.type, reflected: reflected, at: path)
        case (.optional(let d), .optional(let r)), (.array(let d), .array(let r)):
            return differences(declared: d, reflected: r, at: path)
        case (.optional, _): return ["\(path): the IDL says optional (\(declared)), the type requires it (\(reflected))"]
        case (_, .optional): return ["\(path): the IDL says required (\(declared)), the type has it optional (\(reflected))"]
        case (.structure(let d), .structure(let r)):
            var found: [String] = []
            let reflectedByName = Dictionary(r.map { ($0.name, $0.type) }, uniquingKeysWith: { first, _ in first })
            for field in d {
                guard let type = reflectedByName[field.name] else {
                    found.append("\(path).\(field.name): declared (\(field.type)), missing from the type")
                    continue
                }
                found += differences(declared: field.type, reflected: type, at: "\(path).\(field.name)")
            }
            for field in r where !d.contains(where: { $0.name == field.name }) {
                found.append("\(path).\(field.name): in the type (\(field.type)), not declared")
            }
            return found
        // A dictionary reflects as a struct with no fields.
        case (.map, .structure([])): return []
        // A string enum may be a Swift enum, or a String the handler validates.
        case (.enumeration(let d), .enumeration(let r)):
            return Set(d) == Set(r) ? [] : ["\(path): the IDL's values (\(d.joined(separator: ", "))) differ from the type's (\(r.joined(separator: ", ")))"]
        case (.enumeration, .string), (.string, .enumeration): return []
        case (.object, .object), (.bool, .bool), (.int, .int), (.float, .float), (.string, .string): return []
        default: return ["\(path): the IDL says \(declared), the type says \(reflected)"]
        }
    }
}
