// SPDX-License-Identifier: Apache-2.0
/// A strict RFC 8259 JSON parser into `JSONValue`, with a nesting limit.
///
/// The wire parses every message with it, so it is written for hostile input: bounded depth,
/// UTF-8 validated, no recursion deeper than `maxDepth`, an error naming the byte offset. An
/// object with a member name twice is refused: parsers disagree on which one wins, and a
/// filtering proxy that reads the first while appd read the last could be walked past.
public struct JSONParser {
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public static let defaultMaxDepth = 128

    /// Parses one complete JSON document (surrounding whitespace allowed).
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth) throws(Error) -> JSONValue {
        // The bytes of a frame or a body are one of these already: parsed where they are.
        if let slice = bytes as? ArraySlice<UInt8> { return try parse(slice, maxDepth: maxDepth) }
        if let array = bytes as? [UInt8] { return try parse(array, maxDepth: maxDepth) }
        return try parse(Array(bytes)[...], maxDepth: maxDepth)
    }

    /// The same, without copying the bytes (a frame the wire read, a request body).
    public static func parse(_ bytes: ArraySlice<UInt8>, maxDepth: Int = defaultMaxDepth) throws(Error) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(Error) in try parse(buffer, maxDepth: maxDepth) }
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(Error) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(Error) in try parse(buffer, maxDepth: maxDepth) }
    }

    /// Parses one complete JSON document that is an object, handing each member to `member` in
    /// the order written instead of collecting them (a message's envelope: its few members are
    /// read once, with no dictionary built for them). The same checks as `parse`, a member name
    /// twice included. Returns false, having called `member` for nothing, when the document is
    /// valid JSON but not an object.
    public static func parseMembers(
        _ bytes: ArraySlice<UInt8>, maxDepth: Int = defaultMaxDepth, _ member: (String, JSONValue) throws(Error) -> Void
    ) throws(Error) -> Bool {
        try bytes.withUnsafeBufferPointer { buffer throws(Error) in
            var parser = Cursor(bytes: buffer, maxDepth: maxDepth)
            parser.skipWhitespace()
            guard parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: "{") else {
                _ = try parse(buffer, maxDepth: maxDepth)
                return false
            }
            try parser.members(depth: 1, member)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.fail("trailing characters after the document") }
            return true
        }
    }

    private static func parse(_ buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int) throws(Error) -> JSONValue {
        var parser = Cursor(bytes: buffer, maxDepth: maxDepth)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.fail("trailing characters after the document") }
        return value
    }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func fail(_ reason: String) -> Error { Error(offset: index, reason: reason) }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(Error) -> JSONValue {
            guard index < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: String) throws(Error) {
            for byte in word.utf8 {
                guard index < bytes.count, bytes[index] == byte else { throw fail("invalid literal") }
                index += 1
            }
        }

        mutating func object(depth: Int) throws(Error) -> JSONValue {
            guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth)") }
            index += 1
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object([:])
            }
            // Room for six members at once (a call's parameters rarely have more): one
            // allocation, where growing from empty takes three by the fourth member.
            var members = [String: JSONValue](minimumCapacity: 4)
            while true {
                let (key, keyOffset) = try memberName()
                // One hash per member: a name seen before is refused once its value is read.
                guard members.updateValue(try value(depth: depth), forKey: key) == nil else { throw Self.twice(key, at: keyOffset) }
                if try endOfMember(closing: "}") { return .object(members) }
            }
        }

        /// The members of the object at `index`, each handed to `visit` as it is read. Names
        /// seen are compared in a list while there are few of them (an envelope has two to
        /// four), in a set beyond that.
        mutating func members(depth: Int, _ visit: (String, JSONValue) throws(Error) -> Void) throws(Error) {
            guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth)") }
            index += 1
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            var seen: [String] = []
            var many: Set<String> = []
            while true {
                let (key, keyOffset) = try memberName()
                let value = try value(depth: depth)
                if seen.count < 8 {
                    if seen.contains(key) { throw Self.twice(key, at: keyOffset) }
                    seen.append(key)
                } else {
                    if many.isEmpty { many = Set(seen) }
                    guard many.insert(key).inserted else { throw Self.twice(key, at: keyOffset) }
                }
                try visit(key, value)
                if try endOfMember(closing: "}") { return }
            }
        }

        /// `"name" :` at `index` (white space before it skipped): the name and where it began.
        private mutating func memberName() throws(Error) -> (String, Int) {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let keyOffset = index
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            return (key, keyOffset)
        }

        /// After a member: true at the object's end, false at a ',' (both consumed).
        private mutating func endOfMember(closing: Unicode.Scalar) throws(Error) -> Bool {
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; return false }
            if bytes[index] == UInt8(ascii: closing) { index += 1; return true }
            throw fail("expected ',' or '\(closing)'")
        }

        static func twice(_ key: String, at offset: Int) -> Error {
            Error(offset: offset, reason: "the member name '\(key)' appears twice in one object")
        }

        mutating func array(depth: Int) throws(Error) -> JSONValue {
            guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth)") }
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end of input") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func number() throws(Error) -> JSONValue {
            let start = index
            var isInteger = true
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else if isDigit(bytes[index]) {
                while index < bytes.count && isDigit(bytes[index]) { index += 1 }
            } else {
                throw fail("expected a digit")
            }
            if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit after '.'") }
                while index < bytes.count && isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
                isInteger = false
                index += 1
                if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                    index += 1
                }
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit in the exponent") }
                while index < bytes.count && isDigit(bytes[index]) { index += 1 }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if isInteger, let int = Int64(text) { return .int(int) }
            guard let double = Double(text), double.isFinite else { throw fail("number out of range") }
            return .double(double)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

        mutating func string() throws(Error) -> String {
            index += 1
            let start = index
            // Fast path: no escapes, validate UTF-8 once at the end (nothing to validate when
            // every byte was ASCII, as names and most values are).
            var ascii = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    if ascii { return String(decoding: slice, as: UTF8.self) }
                    guard let s = String(validating: slice, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
                    return s
                }
                ascii = ascii && byte < 0x80
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { throw fail("control character in string") }
                index += 1
            }
            var scalars: [UInt8] = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    guard let s = String(validating: scalars, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
                    return s
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { throw fail("unexpected end of input") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append(0x22)
                    case UInt8(ascii: "\\"): scalars.append(0x5C)
                    case UInt8(ascii: "/"): scalars.append(0x2F)
                    case UInt8(ascii: "b"): scalars.append(0x08)
                    case UInt8(ascii: "f"): scalars.append(0x0C)
                    case UInt8(ascii: "n"): scalars.append(0x0A)
                    case UInt8(ascii: "r"): scalars.append(0x0D)
                    case UInt8(ascii: "t"): scalars.append(0x09)
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800...0xDBFF).contains(code) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                            else { throw fail("unpaired surrogate") }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(code) {
                            throw fail("unpaired surrogate")
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw fail("invalid escape") }
                        scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default:
                        throw fail("invalid escape")
                    }
                default:
                    if byte < 0x20 { throw fail("control character in string") }
                    scalars.append(byte)
                    index += 1
                }
            }
            throw fail("unterminated string")
        }

        mutating func hex4() throws(Error) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("unexpected end of input") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw fail("invalid \\u escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }
    }
}
