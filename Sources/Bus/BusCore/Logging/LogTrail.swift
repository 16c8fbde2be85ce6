// SPDX-License-Identifier: Apache-2.0

/// Keeps the newest `capacity` records of the loggers it handles, stamped with when they were
/// logged, and passes each on to `next`: the audit lines the operator console shows (appd
/// bootstraps logging with one for `appd.audit`). Bounded: the oldest give way.
public final class LogTrail: LogHandler {
    /// One kept record and when it was logged.
    public struct Entry: Sendable {
        public var time: WallTime
        public var record: LogRecord
    }

    public let capacity: Int
    private let next: any LogHandler
    private let ring = Locked<(entries: [Entry], start: Int)>(([], 0))

    public init(capacity: Int, next: any LogHandler) {
        self.capacity = max(1, capacity)
        self.next = next
    }

    public func log(_ record: LogRecord) {
        let entry = Entry(time: .now(), record: record)
        ring.withLock { ring in
            if ring.entries.count < capacity {
                ring.entries.append(entry)
            } else {
                ring.entries[ring.start] = entry
                ring.start = (ring.start + 1) % capacity
            }
        }
        next.log(record)
    }

    /// The kept records, newest first.
    public var entries: [Entry] {
        ring.withLock { ring in
            Array((ring.entries[ring.start...] + ring.entries[..<ring.start]).reversed())
        }
    }
}
