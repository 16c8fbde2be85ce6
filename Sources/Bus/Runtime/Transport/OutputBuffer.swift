// SPDX-License-Identifier: Apache-2.0
/// Bytes waiting to be written to a socket: appended at the end, consumed from the front as the
/// socket takes them, without shifting the array on every write.
public struct OutputBuffer: Sendable {
    private(set) var bytes: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes not yet written.
    public var pending: Int { bytes.count - start }
    public var isEmpty: Bool { bytes.count == start }

    /// Encodes straight into the buffer (one pass, no intermediate array).
    public mutating func append(encoding: (inout [UInt8]) -> Void) { encoding(&bytes) }

    /// A view of what is unwritten, for a send outside the owner's lock: copying the struct
    /// only retains the array (appends made meanwhile copy it, the view stays valid).
    var unwritten: ArraySlice<UInt8> { bytes[start...] }

    /// `count` bytes from the front were written.
    mutating func consume(_ count: Int) {
        start += count
        if start == bytes.count {
            // Keep a small buffer for the next reply; give a large one back.
            bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 16)
            start = 0
        } else if start > 1 << 20 {
            bytes.removeFirst(start)
            start = 0
        }
    }
}
