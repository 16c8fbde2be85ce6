extension String {
    /// The string without leading and trailing white space (as `Character.isWhitespace` says).
    /// Returns the string itself, uncopied, when there is nothing to trim (the common case:
    /// it runs on every title and name a client sends).
    public func trimmingWhitespace() -> String {
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
