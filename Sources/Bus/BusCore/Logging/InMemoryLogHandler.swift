// SPDX-License-Identifier: Apache-2.0

/// Keeps records in memory so tests can assert what was logged.
public final class InMemoryLogHandler: LogHandler {
    private let storage = Locked<[LogRecord]>([])

    public init() {}

    public func log(_ record: LogRecord) {
        storage.withLock { $0.append(record) }
    }

    /// Everything logged so far, oldest first.
    public var records: [LogRecord] { storage.withLock { $0 } }
}
