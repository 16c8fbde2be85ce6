// SPDX-License-Identifier: Apache-2.0
/// Severity of a log record, in swift-log's order.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error, critical

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }

    /// Parses a level name as written in config ("info", "warning", …).
    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = level
    }
}

/// One log line before it is rendered.
public struct LogRecord: Sendable {
    public var label: String
    public var level: LogLevel
    public var message: String
    public var metadata: LogMetadata

    public init(label: String, level: LogLevel, message: String, metadata: LogMetadata) {
        self.label = label
        self.level = level
        self.message = message
        self.metadata = metadata
    }
}

/// Where records go: a stream, memory (tests), the journal.
public protocol LogHandler: Sendable {
    func log(_ record: LogRecord)
}

/// A value-type logger in swift-log's shape: a label, a level, metadata and a handler.
public struct Logger: Sendable {
    public let label: String
    /// A level set on this logger; without one it follows `LoggingSystem.level`, which a
    /// configuration reload can change while the daemon runs.
    private var levelOverride: LogLevel?
    public var metadata: LogMetadata
    public let handler: any LogHandler

    public var level: LogLevel {
        get { levelOverride ?? LoggingSystem.level }
        set { levelOverride = newValue }
    }

    /// A logger whose handler comes from `LoggingSystem.bootstrap` (stderr by default).
    public init(label: String, level: LogLevel? = nil) {
        self.label = label
        self.levelOverride = level
        self.metadata = [:]
        self.handler = LoggingSystem.current.makeHandler(label)
    }

    public init(label: String, level: LogLevel = .info, handler: any LogHandler) {
        self.label = label
        self.levelOverride = level
        self.metadata = [:]
        self.handler = handler
    }

    public subscript(metadataKey key: String) -> String? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Logs a message; the message and metadata are only built when the level is enabled.
    public func log(
        _ level: LogLevel, _ message: @autoclosure () -> String,
        metadata extra: @autoclosure () -> LogMetadata = [:]
    ) {
        guard level >= self.level else { return }
        let more = extra()
        // Most loggers carry no metadata of their own: the call's is the record's, unmerged.
        let merged = more.isEmpty ? metadata : metadata.isEmpty ? more : metadata.merging(more) { _, new in new }
        handler.log(LogRecord(label: label, level: level, message: message(), metadata: merged))
    }

    public func trace(_ m: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.trace, m(), metadata: metadata())
    }
    public func debug(_ m: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.debug, m(), metadata: metadata())
    }
    public func info(_ m: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.info, m(), metadata: metadata())
    }
    public func notice(_ m: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.notice, m(), metadata: metadata())
    }
    public func warning(_ m: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.warning, m(), metadata: metadata())
    }
    public func error(_ m: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.error, m(), metadata: metadata())
    }
    public func critical(_ m: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.critical, m(), metadata: metadata())
    }
}
