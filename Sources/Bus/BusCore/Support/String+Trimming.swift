// SPDX-License-Identifier: Apache-2.0
extension String {
    /// The string without leading and trailing white space (as `Character.isWhitespace` says).
    /// Returns the string itself, uncopied, when there is nothing to trim (the common case:
    /// it runs on every title and name a client sends).
    public func trimmingWhitespace() -> String {
        // Printable ASCII at both ends: nothing to trim, decided from two bytes. (An ASCII
        // scalar past 0x20 is never whitespace, and no whitespace scalar joins the grapheme
        // that ends with one.)
        if let head = utf8.first, let tail = utf8.last, (0x21...0x7E).contains(head), (0x21...0x7E).contains(tail) { return self }
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else {
            return ""
        }
        if first == startIndex, index(after: last) == endIndex { return self }
        return String(self[first...last])
    }
}

extension Substring {
    /// The text without leading and trailing white space, as a `String`.
    public func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else {
            return ""
        }
        return String(self[first...last])
    }
}
