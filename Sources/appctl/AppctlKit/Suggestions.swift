// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// "Did you mean …?" lines for usage errors.
enum Suggestions {
    static func closest(to word: String, in candidates: [String]) -> String? {
        EditDistance.closest(to: word, in: candidates)
    }

    static func distance(_ a: String, _ b: String) -> Int { EditDistance.between(a, b) }

    static func hint(for word: String, in candidates: [String]) -> String {
        closest(to: word, in: candidates).map { "\nDid you mean '\($0)'?" } ?? ""
    }
}
