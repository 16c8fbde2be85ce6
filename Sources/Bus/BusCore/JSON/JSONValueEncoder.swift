// SPDX-License-Identifier: Apache-2.0
/// Encodes `Encodable` values straight into a `JSONValue` (no bytes in between).
///
/// Non-finite floats are refused, as JSON has no way to write them.
struct JSONValueEncoder: Encoder {
    /// One value under construction; containers fill it in place. A node knows its parent and
    /// its key there, so a coding path is worked out only when something asks for it (an
    /// error), not copied into every container on the way down.
    ///
    /// A member or element that is a plain value goes straight into `object`/`array`; only one
    /// that is itself a container (filled after its parent's call returns) gets a node of its
    /// own, in `children`. So a flat struct costs one node and one dictionary, not one per field.
    final class Node: EncodingNode {
        var scalar: JSONValue = .null
        var object: [String: JSONValue]?
        var array: [JSONValue]?
        /// Nested containers by key (objects) or index (arrays), merged in by `json`.
        var children: [(key: String, index: Int, node: Node)] = []
        /// Unowned: the parent holds its children, and outlives them while encoding.
        unowned let parent: Node?
        let key: (any CodingKey)?

        init(parent: Node? = nil, key: (any CodingKey)? = nil) {
            self.parent = parent
            self.key = key
        }

        var json: JSONValue {
            if var object {
                for child in children { object[child.key] = child.node.json }
                return .object(object)
            }
            if var array {
                for child in children { array[child.index] = child.node.json }
                return .array(array)
            }
            return scalar
        }

        /// Sets a member to a plain value (the last write of a key wins, as with a dictionary).
        func set(_ key: String, _ value: JSONValue) {
            if !children.isEmpty { children.removeAll { $0.key == key } }
            object?[key] = value
        }

        /// A member that is a container of its own.
        func child(_ key: some CodingKey) -> Node {
            let name = key.stringValue
            if !children.isEmpty { children.removeAll { $0.key == name } }
            object?[name] = .null
            let child = Node(parent: self, key: key)
            children.append((name, 0, child))
            return child
        }

        /// An element that is a container of its own.
        func nextChild() -> Node {
            let index = array?.count ?? 0
            let child = Node(parent: self, key: JSONValueDecoder.IndexKey(index))
            array?.append(.null)
            children.append(("", index, child))
            return child
        }
    }

    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func encode(_ value: some Encodable) throws -> JSONValue {
        if let json = value as? JSONValue { return json }
        // The reply of every method that returns nothing (Ping's): no encoder for `{}`.
        if value is Empty { return .object([:]) }
        let node = Node()
        try value.encode(to: JSONValueEncoder(node: node))
        return node.json
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // Room for a typical reply struct at once: growing a dictionary rehashes it each time.
        if node.object == nil { node.object = Dictionary(minimumCapacity: 8) }
        return KeyedEncodingContainer(Keyed<Key>(node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.array == nil { node.array = [] }
        return Unkeyed(node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node) }

    /// Encodes `value` into `node`, taking the fast path for primitives and JSONValue.
    static func put(_ value: some Encodable, into node: Node) throws {
        if let plain = try plain(value, path: node.codingPath) { node.scalar = plain } else { try value.encode(to: JSONValueEncoder(node: node)) }
    }

    /// `value` as a JSONValue when it is a primitive or JSONValue itself (no node needed);
    /// nil for anything that encodes itself into containers.
    ///
    /// Decided by the value's static type, not by dynamic casts: a cast per member (five for a
    /// member that is none of these) was a tenth of encoding a list of records. An optional
    /// in an array (`[String?]`) is not plain here: it encodes itself through a single-value
    /// container, to the same JSON.
    static func plain<T: Encodable>(_ value: T, path: @autoclosure () -> [any CodingKey]) throws -> JSONValue? {
        // safe: each bit cast is to the type `T` was just found to be.
        if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
        if T.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == Double.self { return try finite(unsafeBitCast(value, to: Double.self), path: path()) }
        if T.self == JSONValue.self { return unsafeBitCast(value, to: JSONValue.self) }
        return nil
    }

    static func finite(_ d: Double, at node: Node) throws -> JSONValue { try finite(d, path: node.codingPath) }

    static func finite(_ d: Double, path: [any CodingKey]) throws -> JSONValue {
        guard d.isFinite else {
            throw EncodingError.invalidValue(d, .init(codingPath: path, debugDescription: "JSON cannot hold \(d)"))
        }
        return .double(d)
    }

    static func integer<I: FixedWidthInteger>(_ value: I) -> JSONValue {
        if let exact = Int64(exactly: value) { return .int(exact) }
        return .double(Double(value))
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        var codingPath: [any CodingKey] { node.codingPath }

        func child(_ key: Key) -> Node { node.child(key) }

        mutating func encodeNil(forKey key: Key) throws { node.set(key.stringValue, .null) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { node.set(key.stringValue, .bool(value)) }
        mutating func encode(_ value: String, forKey key: Key) throws { node.set(key.stringValue, .string(value)) }
        mutating func encode(_ value: Double, forKey key: Key) throws {
            node.set(key.stringValue, try JSONValueEncoder.finite(value, path: node.codingPath + [key]))
        }
        mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Double(value), forKey: key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { node.set(key.stringValue, .int(Int64(value))) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { node.set(key.stringValue, .int(value)) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            if let plain = try JSONValueEncoder.plain(value, path: node.codingPath + [key]) { return node.set(key.stringValue, plain) }
            try value.encode(to: JSONValueEncoder(node: child(key)))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            JSONValueEncoder(node: child(key)).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            JSONValueEncoder(node: child(key)).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { JSONValueEncoder(node: node) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { JSONValueEncoder(node: child(key)) }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        var codingPath: [any CodingKey] { node.codingPath }
        var count: Int { node.array?.count ?? 0 }

        func next() -> Node { node.nextChild() }
        func append(_ value: JSONValue) { node.array?.append(value) }
        var nextPath: [any CodingKey] { node.codingPath + [JSONValueDecoder.IndexKey(count)] }

        mutating func encodeNil() throws { append(.null) }
        mutating func encode(_ value: Bool) throws { append(.bool(value)) }
        mutating func encode(_ value: String) throws { append(.string(value)) }
        mutating func encode(_ value: Double) throws { append(try JSONValueEncoder.finite(value, path: nextPath)) }
        mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            if let plain = try JSONValueEncoder.plain(value, path: nextPath) { return append(plain) }
            try value.encode(to: JSONValueEncoder(node: next()))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            JSONValueEncoder(node: next()).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { JSONValueEncoder(node: next()).unkeyedContainer() }

        mutating func superEncoder() -> any Encoder { JSONValueEncoder(node: next()) }
    }

    struct Single: SingleValueEncodingContainer {
        let node: Node
        var codingPath: [any CodingKey] { node.codingPath }

        mutating func encodeNil() throws { node.scalar = .null }
        mutating func encode(_ value: Bool) throws { node.scalar = .bool(value) }
        mutating func encode(_ value: String) throws { node.scalar = .string(value) }
        mutating func encode(_ value: Double) throws { node.scalar = try JSONValueEncoder.finite(value, at: node) }
        mutating func encode(_ value: Float) throws { try encode(Double(value)) }
        mutating func encode(_ value: Int) throws { node.scalar = .int(Int64(value)) }
        mutating func encode(_ value: Int8) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode(_ value: Int16) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode(_ value: Int32) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode(_ value: Int64) throws { node.scalar = .int(value) }
        mutating func encode(_ value: UInt) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode(_ value: UInt8) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode(_ value: UInt16) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode(_ value: UInt32) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode(_ value: UInt64) throws { node.scalar = JSONValueEncoder.integer(value) }
        mutating func encode<T: Encodable>(_ value: T) throws { try JSONValueEncoder.put(value, into: node) }
    }
}
