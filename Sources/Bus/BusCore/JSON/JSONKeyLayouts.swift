// SPDX-License-Identifier: Apache-2.0

/// How `JSONBytesEncoder` writes an object's members, remembered per coding-key type: the
/// members' keys in the order they were encoded, the order they are written in (sorted by
/// `String <`, the last write of a key winning) and each key's bytes (`"key":`). A type
/// encodes the same keys in the same order every time (or a few variants, with optional members
/// present or not), so after its first value an object is written without sorting its keys or
/// escaping them again. Bounded: a few layouts per type, a few hundred types.
final class JSONKeyLayouts: Sendable {
    struct Layout: Sendable {
        /// The keys as encoded.
        let keys: [String]
        /// Indexes into `keys`, in the order written (each key once).
        let order: [Int]
        /// `"key":` for each entry of `order`.
        let names: [[UInt8]]

        func matches(_ members: [(key: String, piece: JSONBytesEncoder.Piece)]) -> Bool {
            guard keys.count == members.count else { return false }
            for index in keys.indices where keys[index] != members[index].key { return false }
            return true
        }

        init(_ members: [(key: String, piece: JSONBytesEncoder.Piece)]) {
            let keys = members.map(\.key)
            self.keys = keys
            // Sorted by key; of a key written twice, the last write is kept.
            var order: [Int] = []
            for index in keys.indices.sorted(by: { keys[$0] != keys[$1] ? keys[$0] < keys[$1] : $0 < $1 }) {
                if let last = order.last, keys[last] == keys[index] {
                    order[order.count - 1] = index
                } else {
                    order.append(index)
                }
            }
            self.order = order
            self.names = order.map { index in
                var name: [UInt8] = []
                JSONWriter.writeString(keys[index], into: &name)
                name.append(UInt8(ascii: ":"))
                return name
            }
        }
    }

    static let shared = JSONKeyLayouts()
    static let layoutsPerType = 8
    static let types = 512

    private let known = Locked<[ObjectIdentifier: [Layout]]>([:])

    /// The layout of an object of `type` with these members.
    func layout(of type: ObjectIdentifier, _ members: [(key: String, piece: JSONBytesEncoder.Piece)]) -> Layout {
        let hit = known.withLock { table in table[type]?.first { $0.matches(members) } }
        if let hit { return hit }
        let made = Layout(members)
        known.withLock { table in
            if table[type] == nil, table.count >= Self.types { return }
            if table[type, default: []].count < Self.layoutsPerType { table[type, default: []].append(made) }
        }
        return made
    }
}
