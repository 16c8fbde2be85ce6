extension StringProtocol {
    /// The text without leading and trailing white space (and newlines).
    public func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
