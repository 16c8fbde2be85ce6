// SPDX-License-Identifier: Apache-2.0
/// Help text layout in swift-argument-parser's style.
enum Help {
    /// `  name                    description`, wrapping the name onto its own line when long.
    static func row(_ name: String, _ description: String) -> String {
        let column = 26
        let left = "  " + name
        if left.count + 2 <= column {
            return left + String(repeating: " ", count: column - left.count) + description + "\n"
        }
        return left + "\n" + String(repeating: " ", count: column) + description + "\n"
    }
}

extension Help {
    /// The first sentence of a doc comment that may span lines (never cut mid-sentence).
    static func firstSentence(_ doc: String) -> String {
        let text = doc.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.joined(separator: " ")
        guard let end = text.firstRange(of: ". ") else { return text }
        return String(text[..<end.lowerBound]) + "."
    }
}
