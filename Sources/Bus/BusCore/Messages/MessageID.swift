// SPDX-License-Identifier: Apache-2.0

/// A message id: a random per-process prefix and a counter.
///
/// Cheap to make (one atomic increment) because every command and event gets one. Durable
/// events keep theirs in the event log, so a causation chain can be followed across restarts.
public struct MessageID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let sequence: UInt64
    /// The daemon run that made it.
    public let instance: UInt32

    private static let counter = Locked<UInt64>(0)
    /// Distinguishes ids from different daemon runs in logs.
    public static let current = UInt32.random(in: 0...UInt32.max)

    public init(sequence: UInt64, instance: UInt32 = MessageID.current) {
        self.sequence = sequence
        self.instance = instance
    }

    /// Parses the text form (`1a2b3c4d-ff`), as stored in the event log.
    public init?(_ text: String) {
        let parts = text.split(separator: "-")
        guard parts.count == 2, parts[0].count == 8, let instance = UInt32(parts[0], radix: 16),
            let sequence = UInt64(parts[1], radix: 16)
        else { return nil }
        self.init(sequence: sequence, instance: instance)
    }

    /// A fresh id.
    public static func next() -> MessageID {
        MessageID(
            sequence: counter.withLock { count in
                count &+= 1
                return count
            })
    }

    public static func < (a: MessageID, b: MessageID) -> Bool { (a.instance, a.sequence) < (b.instance, b.sequence) }

    /// `instance` as 8 hex digits, `-`, `sequence` in hex without leading zeros; written into
    /// one buffer (every logged event writes two or three of these).
    public var description: String {
        String(unsafeUninitializedCapacity: 25) { buffer in
            let digits: StaticString = "0123456789abcdef"
            let hex = digits.utf8Start
            for i in 0..<8 { buffer[i] = hex[Int((instance >> UInt32(28 - 4 * i)) & 0xF)] }
            buffer[8] = UInt8(ascii: "-")
            let length = max(1, (64 - sequence.leadingZeroBitCount + 3) / 4)
            for i in 0..<length { buffer[9 + i] = hex[Int((sequence >> UInt64(4 * (length - 1 - i))) & 0xF)] }
            return 9 + length
        }
    }
}
