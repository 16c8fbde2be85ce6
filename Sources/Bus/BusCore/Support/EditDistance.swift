// SPDX-License-Identifier: Apache-2.0
/// "Did you mean …?" for mistyped commands, flags, settings and methods.
public enum EditDistance {
    /// Levenshtein distance, case-insensitive.
    public static func between(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// The closest candidate within a small distance, if any.
    public static func closest(to word: String, in candidates: [String]) -> String? {
        guard let best = candidates.min(by: { between(word, $0) < between(word, $1) }) else { return nil }
        return between(word, best) <= max(2, word.count / 3) ? best : nil
    }
}
