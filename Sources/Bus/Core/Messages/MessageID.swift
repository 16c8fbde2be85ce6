import Synchronization

/// A message id: a random per-process prefix and a counter.
///
/// Cheap to make (one atomic increment) because every command and event gets one. Durable
/// events keep theirs in the event log, so a causation chain can be followed across restarts.
public struct MessageID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let sequence: UInt64
    /// The daemon run that made it.
    public let instance: UInt32

    private static let counter = Atomic<UInt64>(0)
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
        MessageID(sequence: counter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    public static func < (a: MessageID, b: MessageID) -> Bool { (a.instance, a.sequence) < (b.instance, b.sequence) }

    public var description: String {
        let prefix = String(instance, radix: 16)
        let seq = String(sequence, radix: 16)
        return String(repeating: "0", count: 8 - prefix.count) + prefix + "-" + seq
    }
}
