// SPDX-License-Identifier: Apache-2.0

/// The one process-wide choice of log handler and default level, set once at start.
public enum LoggingSystem {
    /// What `Logger(label:)` uses to build a handler.
    public struct Factory: Sendable {
        public var level: LogLevel
        public var makeHandler: @Sendable (String) -> any LogHandler

        public init(level: LogLevel, makeHandler: @escaping @Sendable (String) -> any LogHandler) {
            self.level = level
            self.makeHandler = makeHandler
        }
    }

    /// Before a composition root bootstraps (a test process, a tool), lines are marked "[log] ":
    /// a test's expected "error appd.storage: …" reads as what it is, not as a failed test.
    private static let factory = Locked(
        Factory(level: .info, makeHandler: { _ in StreamLogHandler(fd: 2, journald: false, prefix: "[log] ") }))
    private static let currentLevel = Locked<Int>(LogLevel.info.rawValue)

    /// Replaces the process-wide handler factory (the composition root calls this once).
    public static func bootstrap(level: LogLevel = .info, _ make: @escaping @Sendable (String) -> any LogHandler) {
        factory.withLock { $0 = Factory(level: level, makeHandler: make) }
        currentLevel.withLock { $0 = level.rawValue }
    }

    /// The level of every logger that has none of its own; changing it takes effect at once.
    public static var level: LogLevel {
        get { LogLevel(rawValue: currentLevel.withLock { $0 }) ?? .info }
        set { currentLevel.withLock { $0 = newValue.rawValue } }
    }

    static var current: Factory { factory.withLock { $0 } }
}
