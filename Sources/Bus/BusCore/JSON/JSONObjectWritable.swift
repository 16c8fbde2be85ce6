// SPDX-License-Identifier: Apache-2.0
/// A type that writes its own JSON object: the members its `Encodable` conformance encodes, in
/// the order `JSONBytesEncoder` writes them (keys sorted by `String <`, an absent optional left
/// out as `encodeIfPresent` leaves it out), straight into the output. For the few types on hot
/// paths (a page of todos), where Codable's containers cost more than the bytes they make.
///
/// `JSONBytesEncoder` takes this path for such a value wherever it meets one (the reply itself
/// or a member of a Codable parent); `JSONValueEncoder` keeps to the `Encodable` conformance.
/// The two must give the same bytes: a conforming type's test holds it to that
/// (`JSONObjectWritableTests`), over values with every optional member present and absent.
public protocol JSONObjectWritable: Encodable {
    /// Writes the members, in key order, with `object.member(_:_:)`.
    func writeMembers(to object: inout JSONObjectWriter)
    /// About how many bytes the value's JSON takes (its text's bytes and its members' names):
    /// what the writer reserves before it starts, so a page is written into one allocation
    /// instead of one per doubling. Only a hint: a value that takes more still gets it all.
    /// 256 unless a type says otherwise.
    var jsonBytesEstimate: Int { get }
}

extension JSONObjectWritable {
    public var jsonBytesEstimate: Int { 256 }
}

/// Writes JSON objects member by member for `JSONObjectWritable` types.
public struct JSONObjectWriter {
    private(set) var out: [UInt8]
    /// Whether the object being written has no member yet.
    private var first = true
    #if DEBUG
    /// The last key of the object being written: keys must come sorted, each once.
    private var lastKey: String?
    #endif

    init(reservingCapacity capacity: Int) {
        out = []
        out.reserveCapacity(capacity)
    }

    /// The value's JSON bytes.
    public static func bytes(of value: some JSONObjectWritable) -> [UInt8] {
        var writer = JSONObjectWriter(reservingCapacity: max(16, value.jsonBytesEstimate))
        writer.write(value)
        return writer.out
    }

    /// Appends the value's JSON object to `out`.
    static func write(_ value: some JSONObjectWritable, into out: inout [UInt8]) {
        var writer = JSONObjectWriter(reservingCapacity: 0)
        swap(&writer.out, &out)
        writer.write(value)
        swap(&writer.out, &out)
    }

    private mutating func write(_ value: some JSONObjectWritable) {
        let outerFirst = first
        first = true
        #if DEBUG
        let outerKey = lastKey
        lastKey = nil
        #endif
        out.append(UInt8(ascii: "{"))
        value.writeMembers(to: &self)
        out.append(UInt8(ascii: "}"))
        first = outerFirst
        #if DEBUG
        lastKey = outerKey
        #endif
    }

    /// `"name":`, after a comma unless it is the object's first member. A name is an identifier:
    /// nothing in it needs escaping.
    private mutating func key(_ name: StaticString) {
        let bytes = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        #if DEBUG
        let key = String(decoding: bytes, as: UTF8.self)
        assert(
            bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") },
            "JSONObjectWriter: the key \(key) needs escaping")
        assert(lastKey.map { $0 < key } ?? true, "JSONObjectWriter: the key \(key) comes after \(lastKey ?? "") or twice")
        lastKey = key
        #endif
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: bytes)
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    public mutating func member(_ name: StaticString, _ value: String) {
        key(name)
        JSONWriter.writeString(value, into: &out)
    }

    public mutating func member(_ name: StaticString, _ value: Int64) {
        key(name)
        JSONWriter.writeInt(value, into: &out)
    }

    public mutating func member(_ name: StaticString, _ value: Bool) {
        key(name)
        let literal: StaticString = value ? "true" : "false"
        out.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    public mutating func member(_ name: StaticString, _ value: some JSONObjectWritable) {
        key(name)
        write(value)
    }

    public mutating func member<Element: JSONObjectWritable>(_ name: StaticString, _ values: [Element]) {
        key(name)
        out.append(UInt8(ascii: "["))
        for index in values.indices {
            if index > values.startIndex { out.append(UInt8(ascii: ",")) }
            write(values[index])
        }
        out.append(UInt8(ascii: "]"))
    }

    public mutating func member(_ name: StaticString, _ values: [String]) {
        key(name)
        out.append(UInt8(ascii: "["))
        for index in values.indices {
            if index > values.startIndex { out.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(values[index], into: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    // An absent optional is left out, as a synthesized `encode(to:)` leaves it out.

    public mutating func member(_ name: StaticString, _ values: [String]?) {
        if let values { member(name, values) }
    }

    public mutating func member(_ name: StaticString, _ value: String?) {
        if let value { member(name, value) }
    }

    public mutating func member<Value: JSONObjectWritable>(_ name: StaticString, _ value: Value?) {
        if let value { member(name, value) }
    }
}
