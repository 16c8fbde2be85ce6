/// Encodes `Encodable` values straight into a `JSONValue` (no bytes in between).
///
/// Non-finite floats are refused, as JSON has no way to write them.
struct JSONValueEncoder: Encoder {
    /// One value under construction; containers fill it in place. A node knows its parent and
    /// its key there, so a coding path is worked out only when something asks for it (an
    /// error), not copied into every container on the way down.
    final class Node {
        var scalar: JSONValue = .null
        var object: [String: Node]?
        var array: [Node]?
        /// Unowned: the parent holds its children, and outlives them while encoding.
        unowned let parent: Node?
        let key: (any CodingKey)?

        init(parent: Node? = nil, key: (any CodingKey)? = nil) {
            self.parent = parent
            self.key = key
        }

        var json: JSONValue {
            if let object { return .object(object.mapValues(\.json)) }
            if let array { return .array(array.map(\.json)) }
            return scalar
        }

        var codingPath: [any CodingKey] {
            var path: [any CodingKey] = []
            var node = self
            while let key = node.key, let parent = node.parent {
                path.append(key)
                node = parent
            }
            return path.reversed()
        }
    }

    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func encode(_ value: some Encodable) throws -> JSONValue {
        if let json = value as? JSONValue { return json }
        let node = Node()
        try value.encode(to: JSONValueEncoder(node: node))
        return node.json
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.object == nil { node.object = [:] }
        return KeyedEncodingContainer(Keyed<Key>(node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.array == nil { node.array = [] }
        return Unkeyed(node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node) }

    /// Encodes `value` into `node`, taking the fast path for primitives and JSONValue.
    static func put(_ value: some Encodable, into node: Node) throws {
        switch value {
        case let json as JSONValue: node.scalar = json
        case let s as String: node.scalar = .string(s)
        case let b as Bool: node.scalar = .bool(b)
        case let i as Int: node.scalar = .int(Int64(i))
        case let i as Int64: node.scalar = .int(i)
        case let d as Double: node.scalar = try finite(d, at: node)
        default: try value.encode(to: JSONValueEncoder(node: node))
        }
    }

    static func finite(_ d: Double, at node: Node) throws -> JSONValue {
        guard d.isFinite else {
            throw EncodingError.invalidValue(d, .init(codingPath: node.codingPath, debugDescription: "JSON cannot hold \(d)"))
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

        func child(_ key: Key) -> Node {
            let child = Node(parent: node, key: key)
            node.object?[key.stringValue] = child
            return child
        }

        mutating func encodeNil(forKey key: Key) throws { child(key).scalar = .null }
        mutating func encode(_ value: Bool, forKey key: Key) throws { child(key).scalar = .bool(value) }
        mutating func encode(_ value: String, forKey key: Key) throws { child(key).scalar = .string(value) }
        mutating func encode(_ value: Double, forKey key: Key) throws {
            let child = child(key)
            child.scalar = try JSONValueEncoder.finite(value, at: child)
        }
        mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Double(value), forKey: key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { child(key).scalar = .int(Int64(value)) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { child(key).scalar = .int(value) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try JSONValueEncoder.put(value, into: child(key))
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

        func next() -> Node {
            let child = Node(parent: node, key: JSONValueDecoder.IndexKey(count))
            node.array?.append(child)
            return child
        }

        mutating func encodeNil() throws { next().scalar = .null }
        mutating func encode(_ value: Bool) throws { next().scalar = .bool(value) }
        mutating func encode(_ value: String) throws { next().scalar = .string(value) }
        mutating func encode(_ value: Double) throws {
            let child = next()
            child.scalar = try JSONValueEncoder.finite(value, at: child)
        }
        mutating func encode(_ value: Int) throws { next().scalar = .int(Int64(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws { try JSONValueEncoder.put(value, into: next()) }

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
