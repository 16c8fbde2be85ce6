// SPDX-License-Identifier: Apache-2.0
/// A request's header fields as the server read them: names lower-cased, a repeated name's last
/// value. A client sends a handful (3 to 10), so they are kept in the order read and found by
/// comparing names, with no hashing of each name as it is stored and again as it is looked up
/// (a dictionary's cost, paid on every request). Read by name with `fields["content-type"]`.
public struct HTTPHeaderFields: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    private var fields: [(name: String, value: String)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    public init(_ dictionary: [String: String]) {
        for (name, value) in dictionary { self[name] = value }
    }

    /// The value of the field named `name` (lower-case), or nil. Setting nil removes it. Names
    /// of another length are passed over without comparing them (`==` on two different strings
    /// runs Unicode-aware comparison; names are ASCII).
    public subscript(name: String) -> String? {
        get { index(of: name).map { fields[$0].value } }
        set {
            switch (index(of: name), newValue) {
            case (let index?, let value?): fields[index].value = value
            case (let index?, nil): fields.remove(at: index)
            case (nil, let value?): fields.append((name, value))
            case (nil, nil): break
            }
        }
    }

    private func index(of name: String) -> Int? {
        let length = name.utf8.count
        return fields.firstIndex { $0.name.utf8.count == length && $0.name == name }
    }

    mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    public var count: Int { fields.count }

    /// The fields as a dictionary (a webhook's signature check gets them so).
    public var dictionary: [String: String] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.dictionary == rhs.dictionary }
}
