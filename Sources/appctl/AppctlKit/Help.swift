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
