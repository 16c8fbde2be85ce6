// SPDX-License-Identifier: Apache-2.0
/// A small, deterministic, lexicon-based sentiment scorer for user messages.
///
/// Each word found in the lexicon adds its weight (positive or negative, 1 to 3). A negator
/// ("not", "never", "no", "don't", "isn't", … any word ending in "n't") within the three words
/// before a lexicon word flips that word's sign ("not good" is negative, "not bad" is
/// positive); an intensifier right before it ("very", "really", "so", "extremely", "super")
/// multiplies it by 1.5. The sum is normalised to -1…1 as `sum / (|sum| + 4)`, so one strong
/// word is a clear signal and many words do not run away. No lexicon word: 0 (neutral).
public enum SentimentScorer {
    static let lexicon: [String: Double] = [
        // positive
        "good": 2, "great": 3, "excellent": 3, "amazing": 3, "awesome": 3, "love": 3, "loved": 3, "like": 1, "liked": 1, "nice": 2,
        "helpful": 2, "thanks": 2, "thank": 2, "perfect": 3, "fantastic": 3, "wonderful": 3, "happy": 2, "glad": 2, "works": 1,
        "worked": 1, "useful": 2, "brilliant": 3, "cool": 1, "fine": 1, "best": 3, "better": 1, "easy": 1, "fast": 1, "clear": 1,
        "impressive": 2, "enjoy": 2, "enjoyed": 2, "beautiful": 2, "correct": 1, "right": 1, "yes": 1, "solved": 2, "fixed": 1,
        // negative
        "bad": -2, "terrible": -3, "awful": -3, "horrible": -3, "hate": -3, "hated": -3, "wrong": -2, "useless": -3, "broken": -2,
        "bug": -1, "buggy": -2, "slow": -1, "annoying": -2, "annoyed": -2, "frustrating": -2, "frustrated": -2, "confusing": -2,
        "confused": -1, "worst": -3, "worse": -2, "fail": -2, "failed": -2, "fails": -2, "error": -1, "crash": -2, "crashes": -2,
        "stupid": -2, "disappointed": -2, "disappointing": -2, "poor": -2, "sad": -2, "angry": -3, "problem": -1, "issue": -1,
        "unhelpful": -2, "waste": -2, "ugly": -2, "hard": -1, "difficult": -1, "nonsense": -2, "garbage": -3, "incorrect": -2,
    ]
    static let negators: Set<String> = [
        "not", "no", "never", "none", "nothing", "neither", "nor", "without", "hardly", "barely", "cannot", "cant", "dont", "doesnt",
        "didnt", "isnt", "wasnt", "arent", "werent", "wont", "wouldnt", "shouldnt", "couldnt",
    ]
    static let intensifiers: Set<String> = ["very", "really", "so", "extremely", "super", "too", "totally", "absolutely", "incredibly"]

    /// The sentiment of `text`, from -1 (negative) to 1 (positive).
    public static func score(_ text: String) -> Double {
        let words = tokens(text)
        var sum = 0.0
        for (i, word) in words.enumerated() {
            guard var weight = lexicon[word] else { continue }
            if i > 0, intensifiers.contains(words[i - 1]) { weight *= 1.5 }
            let window = words[max(0, i - 3)..<i]
            if window.contains(where: isNegator) { weight = -weight }
            sum += weight
        }
        return sum / (abs(sum) + 4)
    }

    static func isNegator(_ word: String) -> Bool { negators.contains(word) }

    /// Lower-cased words; "n't" becomes the word "not" ("don't" → "do not"), other apostrophes
    /// are dropped.
    static func tokens(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        for ch in text.lowercased().replacing("n't", with: " not").replacing("n’t", with: " not") {
            if ch.isLetter {
                current.append(ch)
            } else if ch == "'" || ch == "’" {
                continue
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}
