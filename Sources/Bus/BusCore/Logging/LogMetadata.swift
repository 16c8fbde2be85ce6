// SPDX-License-Identifier: Apache-2.0

/// Structured metadata: dotted keys to string values (`message.id`, `peer.uid`), kept in key
/// order, each key once.
///
/// Written as a dictionary (`["method": m, "status": s]`) and read as one (`metadata["status"]`),
/// but held as a short sorted array: a record carries a handful of pairs, so building one hashes
/// nothing, and writing one (a line per HTTP request at `info`) sorts nothing. A literal whose
/// keys come in order (the access log's) is built by appending.
public struct LogMetadata: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public typealias Element = (key: String, value: String)

    /// Sorted by key; no key twice. Unlabelled, so a literal's own array is kept as it is.
    private var pairs: [(String, String)]

    public init() { pairs = [] }

    /// Later pairs replace earlier ones with the same key. A literal written in key order is
    /// kept as it came (no copy).
    public init(dictionaryLiteral elements: (String, String)...) {
        if zip(elements, elements.dropFirst()).allSatisfy({ $0.0 < $1.0 }) {
            pairs = elements
            return
        }
        pairs = []
        pairs.reserveCapacity(elements.count)
        for (key, value) in elements { self[key] = value }
    }

    public init(_ dictionary: [String: String]) {
        pairs = dictionary.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public var isEmpty: Bool { pairs.isEmpty }
    public var count: Int { pairs.count }
    public var keys: [String] { pairs.map(\.0) }

    /// The value for `key`; setting nil removes it.
    public subscript(key: String) -> String? {
        get {
            let (index, found) = position(of: key)
            return found ? pairs[index].1 : nil
        }
        set {
            let (index, found) = position(of: key)
            switch (newValue, found) {
            case (let value?, true): pairs[index].1 = value
            case (let value?, false): pairs.insert((key, value), at: index)
            case (nil, true): pairs.remove(at: index)
            case (nil, false): break
            }
        }
    }

    /// Where `key` is, or where it would go to keep the order.
    private func position(of key: String) -> (index: Int, found: Bool) {
        // Appending in order (a literal written in key order) decides at the last pair.
        if let last = pairs.last, last.0 < key { return (pairs.count, false) }
        var low = 0
        var high = pairs.count
        while low < high {
            let middle = (low + high) / 2
            if pairs[middle].0 < key { low = middle + 1 } else { high = middle }
        }
        return (low, low < pairs.count && pairs[low].0 == key)
    }

    /// These pairs and `other`'s; `combine` decides a key both have (this value, then other's).
    public func merging(_ other: LogMetadata, uniquingKeysWith combine: (String, String) throws -> String) rethrows -> LogMetadata {
        var merged = self
        for (key, value) in other {
            if let mine = merged[key] { merged[key] = try combine(mine, value) } else { merged[key] = value }
        }
        return merged
    }

    /// A dictionary of the values transformed (for JSON).
    public func mapValues<T>(_ transform: (String) throws -> T) rethrows -> [String: T] {
        var out: [String: T] = [:]
        out.reserveCapacity(pairs.count)
        for (key, value) in pairs { out[key] = try transform(value) }
        return out
    }

    /// The pairs in key order.
    public func makeIterator() -> Iterator { Iterator(pairs: pairs.makeIterator()) }

    public struct Iterator: IteratorProtocol {
        var pairs: IndexingIterator<[(String, String)]>
        public mutating func next() -> Element? { pairs.next().map { (key: $0.0, value: $0.1) } }
    }

    public static func == (a: LogMetadata, b: LogMetadata) -> Bool {
        a.pairs.count == b.pairs.count && zip(a.pairs, b.pairs).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// As a dictionary prints: `["key": "value", …]`, in key order.
    public var description: String {
        pairs.isEmpty ? "[:]" : "[" + pairs.map { "\"\($0.0)\": \"\($0.1)\"" }.joined(separator: ", ") + "]"
    }
}
