import Synchronization

/// A process-unique message id: a random per-process prefix and a counter.
///
/// Cheap to make (one atomic increment) because every command and event gets one.
public struct MessageID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let sequence: UInt64

    private static let counter = Atomic<UInt64>(0)
    /// Distinguishes ids from different daemon runs in logs.
    static let instance = UInt32.random(in: 0...UInt32.max)

    public init(sequence: UInt64) { self.sequence = sequence }

    /// A fresh id.
    public static func next() -> MessageID {
        MessageID(sequence: counter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    public static func < (a: MessageID, b: MessageID) -> Bool { a.sequence < b.sequence }

    public var description: String {
        let prefix = String(Self.instance, radix: 16)
        let seq = String(sequence, radix: 16)
        return String(repeating: "0", count: 8 - prefix.count) + prefix + "-" + seq
    }
}
