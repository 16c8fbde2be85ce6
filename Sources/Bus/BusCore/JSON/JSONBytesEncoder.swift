// SPDX-License-Identifier: Apache-2.0
/// Encodes `Encodable` values straight to compact JSON bytes: exactly the bytes of
/// `JSONWriter.bytes(JSONValue(encoding:))` (keys sorted, the last write of a key wins, the same
/// numbers and escapes, non-finite floats refused), without the `JSONValue` tree in between —
/// a typed reply is encoded once, to the bytes the wire sends.
///
/// Scalars are written as they come into one buffer; a container keeps only where its members'
/// bytes lie (or the container a member is), so an object's keys can be sorted when it is
/// written out. The scalar rules are `JSONValueEncoder`'s own (`plain`, `finite`, `integer`)
/// and the bytes `JSONWriter`'s, so the two paths cannot drift apart. A `JSONObjectWritable`
/// value, wherever it is met, writes its own object (the same bytes, held to them by its test).
public enum JSONBytesEncoder {
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        if let json = value as? JSONValue { return JSONWriter.bytes(json) }
        if value is Empty { return Array("{}".utf8) }
        if let object = value as? any JSONObjectWritable { return JSONObjectWriter.bytes(of: object) }
        return try encodeTree(value)
    }

    /// `encode` for every value of `Value`, with its kind (a `JSONValue`, `Empty`, a
    /// `JSONObjectWritable`, any other) found once, when the encoder is made, instead of by
    /// casts on every value: a handler's reply encoder, made when it is registered. (The cast to
    /// `any JSONObjectWritable` looks a conformance up in the runtime's cache each time.)
    public static func encoder<Value: Encodable & Sendable>(for type: Value.Type) -> @Sendable (Value) throws -> [UInt8] {
        if Value.self == JSONValue.self { return { JSONWriter.bytes(unsafeBitCast($0, to: JSONValue.self)) } }
        if Value.self == Empty.self {
            let empty = Array("{}".utf8)  // one array, shared by every reply (no allocation each)
            return { _ in empty }
        }
        if let writable = Value.self as? any (JSONObjectWritable & Sendable).Type { return writing(writable) }
        return { try encodeTree($0) }
    }

    /// The encoder of a `JSONObjectWritable` type (`W` is `Value`, opened from the metatype).
    private static func writing<Value: Encodable & Sendable, W: JSONObjectWritable & Sendable>(_: W.Type) -> @Sendable (Value) throws -> [UInt8] {
        { JSONObjectWriter.bytes(of: unsafeBitCast($0, to: W.self)) }
    }

    /// Encodes through `Encodable` (the value's own object not written by itself).
    private static func encodeTree(_ value: some Encodable) throws -> [UInt8] {
        let scratch = Scratch()
        let node = Node(scratch: scratch)
        try value.encode(to: Encoder(node: node))
        var out: [UInt8] = []
        out.reserveCapacity(scratch.bytes.count + 16)
        node.write(into: &out)
        return out
    }

    /// The scalars' bytes, in the order they were encoded.
    final class Scratch {
        // safe: one encode owns its scratch and nodes on one thread, and no access to them
        // overlaps another (no closure holds one across a call): the run-time exclusivity
        // checks cost about a tenth of an encode.
        @exclusivity(unchecked) var bytes: [UInt8] = []
        init() { bytes.reserveCapacity(256) }

        func add(_ value: JSONValue) -> Piece { piece { JSONWriter.write(value, into: &$0) } }

        // The common scalars written as they are, without a `JSONValue` made for each: the
        // same bytes `JSONWriter.write` makes for `.string`, `.int`, `.bool` and `.null`.
        func add(string value: String) -> Piece { piece { JSONWriter.writeString(value, into: &$0) } }
        func add(int value: Int64) -> Piece { piece { JSONWriter.writeInt(value, into: &$0) } }
        func add(bool value: Bool) -> Piece { add(literal: value ? "true" : "false") }
        func add(object value: some JSONObjectWritable) -> Piece { piece { JSONObjectWriter.write(value, into: &$0) } }
        func add(literal value: StaticString) -> Piece {
            piece { $0.append(contentsOf: UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount)) }
        }

        /// What `write` appends, as a piece.
        @inline(__always)
        private func piece(_ write: (inout [UInt8]) -> Void) -> Piece {
            let start = bytes.count
            write(&bytes)
            return .bytes(start..<bytes.count)
        }
    }

    /// A member's or an element's value: bytes in the scratch buffer, or a container.
    enum Piece {
        case bytes(Range<Int>)
        case node(Node)
    }

    /// One value under construction, as `JSONValueEncoder.Node`: an object wins over an array,
    /// an array over a scalar, and a value never given any is `null`.
    final class Node: EncodingNode {
        let scratch: Scratch
        // safe: as `Scratch.bytes`.
        @exclusivity(unchecked) var object: [(key: String, piece: Piece)]?
        @exclusivity(unchecked) var array: [Piece]?
        @exclusivity(unchecked) var scalar: Range<Int>?
        /// The coding-key type of its keyed container (see `JSONKeyLayouts`).
        var keyType: ObjectIdentifier?
        /// Unowned: the parent holds its children, and outlives them while encoding.
        unowned let parent: Node?
        let key: (any CodingKey)?

        init(scratch: Scratch, parent: Node? = nil, key: (any CodingKey)? = nil) {
            self.scratch = scratch
            self.parent = parent
            self.key = key
        }

        /// Sets a member. Members are only appended: a key written twice is settled when the
        /// object is written (`JSONKeyLayouts.Layout`: the last write wins).
        func set(_ key: String, _ piece: Piece) {
            object?.append((key, piece))
        }

        func child(_ key: some CodingKey) -> Node {
            let child = Node(scratch: scratch, parent: self, key: key)
            set(key.stringValue, .node(child))
            return child
        }

        func nextChild() -> Node {
            let child = Node(scratch: scratch, parent: self, key: JSONValueDecoder.IndexKey(array?.count ?? 0))
            array?.append(.node(child))
            return child
        }

        func write(into out: inout [UInt8]) {
            if let object {
                out.append(UInt8(ascii: "{"))
                if object.count > 1 {
                    let layout = keyType.map { JSONKeyLayouts.shared.layout(of: $0, object) } ?? JSONKeyLayouts.Layout(object)
                    for (position, index) in layout.order.enumerated() {
                        if position > 0 { out.append(UInt8(ascii: ",")) }
                        out.append(contentsOf: layout.names[position])
                        write(object[index].piece, into: &out)
                    }
                } else {
                    for (index, member) in object.enumerated() {
                        if index > 0 { out.append(UInt8(ascii: ",")) }
                        JSONWriter.writeString(member.key, into: &out)
                        out.append(UInt8(ascii: ":"))
                        write(member.piece, into: &out)
                    }
                }
                out.append(UInt8(ascii: "}"))
            } else if let array {
                out.append(UInt8(ascii: "["))
                for (index, piece) in array.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    write(piece, into: &out)
                }
                out.append(UInt8(ascii: "]"))
            } else if let scalar {
                out.append(contentsOf: scratch.bytes[scalar])
            } else {
                out.append(contentsOf: "null".utf8)
            }
        }

        private func write(_ piece: Piece, into out: inout [UInt8]) {
            switch piece {
            case .bytes(let range): out.append(contentsOf: scratch.bytes[range])
            case .node(let node): node.write(into: &out)
            }
        }
    }

    struct Encoder: Swift.Encoder {
        let node: Node
        var codingPath: [any CodingKey] { node.codingPath }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if node.object == nil {
                node.object = []
                node.object!.reserveCapacity(8)
            }
            node.keyType = ObjectIdentifier(Key.self)
            return KeyedEncodingContainer(Keyed<Key>(node: node))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if node.array == nil { node.array = [] }
            return Unkeyed(node: node)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node) }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        var codingPath: [any CodingKey] { node.codingPath }

        private func set(_ key: Key, _ value: JSONValue) { node.set(key.stringValue, node.scratch.add(value)) }

        mutating func encodeNil(forKey key: Key) throws { node.set(key.stringValue, node.scratch.add(literal: "null")) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { node.set(key.stringValue, node.scratch.add(bool: value)) }
        mutating func encode(_ value: String, forKey key: Key) throws { node.set(key.stringValue, node.scratch.add(string: value)) }
        mutating func encode(_ value: Double, forKey key: Key) throws {
            set(key, try JSONValueEncoder.finite(value, path: node.codingPath + [key]))
        }
        mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Double(value), forKey: key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { node.set(key.stringValue, node.scratch.add(int: Int64(value))) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { node.set(key.stringValue, node.scratch.add(int: value)) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            if let plain = try JSONValueEncoder.plain(value, path: node.codingPath + [key]) { return set(key, plain) }
            if let object = value as? any JSONObjectWritable { return node.set(key.stringValue, node.scratch.add(object: object)) }
            try value.encode(to: Encoder(node: node.child(key)))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            Encoder(node: node.child(key)).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            Encoder(node: node.child(key)).unkeyedContainer()
        }

        mutating func superEncoder() -> any Swift.Encoder { Encoder(node: node) }
        mutating func superEncoder(forKey key: Key) -> any Swift.Encoder { Encoder(node: node.child(key)) }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        var codingPath: [any CodingKey] { node.codingPath }
        var count: Int { node.array?.count ?? 0 }

        private func append(_ value: JSONValue) { node.array?.append(node.scratch.add(value)) }
        private var nextPath: [any CodingKey] { node.codingPath + [JSONValueDecoder.IndexKey(count)] }

        mutating func encodeNil() throws { node.array?.append(node.scratch.add(literal: "null")) }
        mutating func encode(_ value: Bool) throws { node.array?.append(node.scratch.add(bool: value)) }
        mutating func encode(_ value: String) throws { node.array?.append(node.scratch.add(string: value)) }
        mutating func encode(_ value: Double) throws { append(try JSONValueEncoder.finite(value, path: nextPath)) }
        mutating func encode(_ value: Int) throws { node.array?.append(node.scratch.add(int: Int64(value))) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            if let plain = try JSONValueEncoder.plain(value, path: nextPath) { return append(plain) }
            if let object = value as? any JSONObjectWritable {
                node.array?.append(node.scratch.add(object: object))
                return
            }
            try value.encode(to: Encoder(node: node.nextChild()))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            Encoder(node: node.nextChild()).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { Encoder(node: node.nextChild()).unkeyedContainer() }

        mutating func superEncoder() -> any Swift.Encoder { Encoder(node: node.nextChild()) }
    }

    struct Single: SingleValueEncodingContainer {
        let node: Node
        var codingPath: [any CodingKey] { node.codingPath }

        private func put(_ value: JSONValue) {
            guard case .bytes(let range) = node.scratch.add(value) else { return }
            node.scalar = range
        }

        mutating func encodeNil() throws { put(.null) }
        mutating func encode(_ value: Bool) throws { put(.bool(value)) }
        mutating func encode(_ value: String) throws { put(.string(value)) }
        mutating func encode(_ value: Double) throws { put(try JSONValueEncoder.finite(value, path: node.codingPath)) }
        mutating func encode(_ value: Float) throws { try encode(Double(value)) }
        mutating func encode(_ value: Int) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode(_ value: Int16) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode(_ value: Int32) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode(_ value: Int64) throws { put(.int(value)) }
        mutating func encode(_ value: UInt) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode(_ value: UInt8) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode(_ value: UInt16) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode(_ value: UInt32) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode(_ value: UInt64) throws { put(JSONValueEncoder.integer(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            if let plain = try JSONValueEncoder.plain(value, path: node.codingPath) { return put(plain) }
            try value.encode(to: Encoder(node: node))
        }
    }
}
