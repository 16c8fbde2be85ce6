// SPDX-License-Identifier: Apache-2.0

/// One `Range: bytes=…` request (RFC 9110 §14.1.2): a first-last, a first-, or a suffix range.
/// Several ranges at once are answered whole (a server may ignore Range), as is anything that
/// is not a bytes range.
enum ByteRange: Equatable {
    case whole
    case unsatisfiable
    /// Inclusive bounds.
    case part(Int, Int)

    static func parse(_ header: String, length: Int) -> ByteRange {
        let value = header.trimmingWhitespace()
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return .whole }
        let spec = value.dropFirst(6).trimmingWhitespace()
        guard let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingWhitespace(), last = spec[spec.index(after: dash)...].trimmingWhitespace()
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit), first.count <= 18, last.count <= 18 else { return .whole }
        if first.isEmpty {
            // The last n bytes.
            guard let n = Int(last), n > 0, length > 0 else { return last.isEmpty ? .whole : .unsatisfiable }
            return .part(max(0, length - n), length - 1)
        }
        guard let lower = Int(first) else { return .whole }
        guard lower < length else { return .unsatisfiable }
        if last.isEmpty { return .part(lower, length - 1) }
        guard let upper = Int(last), upper >= lower else { return .whole }
        return .part(lower, min(upper, length - 1))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
