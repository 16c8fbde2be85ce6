// SPDX-License-Identifier: Apache-2.0
/// Parses varlink interface definitions (the full grammar of varlink.org's
/// Interface-Definition page), keeping doc comments for help text.
struct VarlinkIDLParser {
    struct Parsed {
        var name = ""
        var doc = ""
        var types: [VarlinkTypeDefinition] = []
        var methods: [VarlinkMethod] = []
        var errors: [VarlinkErrorDefinition] = []
    }

    enum Token: Equatable {
        case word(String)
        case punct(String)
        case end
    }

    private let bytes: [UInt8]
    private var index = 0
    private(set) var line = 1
    /// Comment lines seen since the last token, for the next member's doc.
    private var pendingDoc: [String] = []

    init(text: String) { self.bytes = Array(text.utf8) }

    mutating func parseInterface() throws(VarlinkIDLError) -> Parsed {
        var parsed = Parsed()
        guard try next() == .word("interface") else { throw fail("expected 'interface' first") }
        parsed.doc = takeDoc()
        guard case .word(let name) = try next() else { throw fail("expected the interface name") }
        parsed.name = name
        while true {
            let token = try next()
            let doc = takeDoc()
            switch token {
            case .end: return parsed
            case .word("type"):
                let name = try memberName()
                let type = try structOrEnum()
                parsed.types.append(VarlinkTypeDefinition(name: name, type: type, doc: doc))
            case .word("method"):
                let name = try memberName()
                guard try next() == .punct("(") else { throw fail("expected '(' after method \(name)") }
                let input = try fields()
                guard try next() == .punct("->") else { throw fail("expected '->' in method \(name)") }
                guard try next() == .punct("(") else { throw fail("expected '(' for the output of \(name)") }
                let output = try fields()
                parsed.methods.append(VarlinkMethod(name: name, input: input, output: output, doc: doc))
            case .word("error"):
                let name = try memberName()
                guard try next() == .punct("(") else { throw fail("expected '(' after error \(name)") }
                let category: ErrorCategory?
                do {
                    category = try ErrorCategory.declared(in: doc)
                } catch {
                    throw fail("error \(name) declares the category '\(error.text)'; one of: \(ErrorCategory.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                parsed.errors.append(VarlinkErrorDefinition(name: name, fields: try fields(), doc: doc, category: category))
            default:
                throw fail("expected 'type', 'method' or 'error'")
            }
        }
    }

    private func fail(_ reason: String) -> VarlinkIDLError { VarlinkIDLError(line: line, reason: reason) }

    private mutating func takeDoc() -> String {
        defer { pendingDoc = [] }
        return pendingDoc.joined(separator: "\n")
    }

    private mutating func memberName() throws(VarlinkIDLError) -> String {
        guard case .word(let name) = try next() else { throw fail("expected a name") }
        return name
    }

    /// After a `(`: either a struct (`name: type, …`) or an enum (`a, b, …`).
    private mutating func structOrEnum() throws(VarlinkIDLError) -> VarlinkType {
        guard try next() == .punct("(") else { throw fail("expected '('") }
        let save = (index, line, pendingDoc)
        if case .word = try next(), try next() == .punct(":") {
            (index, line, pendingDoc) = save
            return .structure(try fields())
        }
        (index, line, pendingDoc) = save
        if try peek() == .punct(")") {
            _ = try next()
            return .structure([])
        }
        var values: [String] = []
        while true {
            guard case .word(let value) = try next() else { throw fail("expected an enum value") }
            values.append(value)
            switch try next() {
            case .punct(","): continue
            case .punct(")"): return .enumeration(values)
            default: throw fail("expected ',' or ')' in enum")
            }
        }
    }

    /// After a `(`: `name: type, …)`.
    private mutating func fields() throws(VarlinkIDLError) -> [VarlinkField] {
        var fields: [VarlinkField] = []
        if try peek() == .punct(")") {
            _ = try next()
            _ = takeDoc()
            return fields
        }
        while true {
            guard case .word(let name) = try next() else { throw fail("expected a field name") }
            let doc = takeDoc()
            guard try next() == .punct(":") else { throw fail("expected ':' after field \(name)") }
            fields.append(VarlinkField(name: name, type: try typeSpec(), doc: doc))
            switch try next() {
            case .punct(","): continue
            case .punct(")"):
                _ = takeDoc()
                return fields
            default: throw fail("expected ',' or ')' after field \(name)")
            }
        }
    }

    private mutating func typeSpec() throws(VarlinkIDLError) -> VarlinkType {
        switch try next() {
        case .punct("?"): return .optional(try typeSpec())
        case .punct("["):
            switch try next() {
            case .punct("]"): return .array(try typeSpec())
            case .word("string"):
                guard try next() == .punct("]") else { throw fail("expected ']' after '[string'") }
                return .map(try typeSpec())
            default: throw fail("expected '[]' or '[string]'")
            }
        case .punct("("):
            index -= 1
            return try structOrEnum()
        case .word("bool"): return .bool
        case .word("int"): return .int
        case .word("float"): return .float
        case .word("string"): return .string
        case .word("object"): return .object
        case .word(let name): return .named(name)
        default: throw fail("expected a type")
        }
    }

    private mutating func peek() throws(VarlinkIDLError) -> Token {
        let save = (index, line, pendingDoc)
        defer { (index, line, pendingDoc) = save }
        return try next()
    }

    mutating func next() throws(VarlinkIDLError) -> Token {
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\n"):
                line += 1
                index += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                index += 1
            case UInt8(ascii: "#"):
                let start = index + 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
                var comment = String(decoding: bytes[start..<index], as: UTF8.self)
                if comment.hasPrefix(" ") { comment.removeFirst() }
                pendingDoc.append(comment)
            case UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "?"),
                UInt8(ascii: "["), UInt8(ascii: "]"):
                index += 1
                return .punct(String(UnicodeScalar(byte)))
            case UInt8(ascii: "-"):
                guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") else { throw fail("stray '-'") }
                index += 2
                return .punct("->")
            default:
                guard Self.isWordByte(byte) else { throw fail("unexpected character '\(UnicodeScalar(byte))'") }
                let start = index
                while index < bytes.count && Self.isWordByte(bytes[index]) { index += 1 }
                return .word(String(decoding: bytes[start..<index], as: UTF8.self))
            }
        }
        return .end
    }

    static func isWordByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x2E
            || b == 0x2D
    }
}
