// SPDX-License-Identifier: Apache-2.0
extension Unicode.Scalar {
    /// C0 and C1 control characters and DEL (Unicode category Cc): NUL, ESC, BEL, …
    public var isControl: Bool { value < 0x20 || (0x7F...0x9F).contains(value) }
}

extension String {
    /// Whether any scalar is a control character: refused in identifiers and names, which are
    /// printed to terminals and compared as keys.
    public var containsControlCharacters: Bool { unicodeScalars.contains { $0.isControl } }

    /// The text with every control character shown as `\u{1b}`, so server-provided text printed
    /// to a terminal cannot move the cursor, retitle the window or ring the bell. Line feeds and
    /// tabs stay when `keepingLines` (free text such as a chat reply).
    public func escapingControlCharacters(keepingLines: Bool = false) -> String {
        guard containsControlCharacters else { return self }
        var out = ""
        for scalar in unicodeScalars {
            if scalar.isControl && !(keepingLines && (scalar == "\n" || scalar == "\t")) {
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
