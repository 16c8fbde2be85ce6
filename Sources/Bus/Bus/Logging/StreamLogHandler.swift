#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Writes one line per record to a file descriptor: `level label: message key=value …`.
///
/// Under systemd (`journald` true) each line starts with the kernel-style priority prefix
/// `<N>` that journald reads as the record's priority.
public final class StreamLogHandler: LogHandler {
    private let fd: Int32
    private let journald: Bool
    /// Serialises writes so lines from concurrent tasks never interleave.
    private let lock: Mutex<Void>

    public init(fd: Int32, journald: Bool) {
        self.fd = fd
        self.journald = journald
        self.lock = Mutex(())
    }

    /// A handler on stderr that uses journald prefixes when stderr is connected to the journal.
    public static func standardError() -> StreamLogHandler {
        StreamLogHandler(fd: 2, journald: Systemd.loggingToJournal)
    }

    public func log(_ record: LogRecord) {
        var line = journald ? "<\(Self.priority(record.level))>" : ""
        line += "\(record.level) \(record.label): \(record.message)"
        for key in record.metadata.keys.sorted() {
            line += " \(key)=\(Self.quoted(record.metadata[key] ?? ""))"
        }
        line += "\n"
        _ = lock.withLock { _ in FileDescriptorWriter.writeAll(fd, Array(line.utf8)) }
    }

    /// syslog priorities as journald reads them.
    static func priority(_ level: LogLevel) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }
        guard needsQuotes else { return value }
        var out = "\""
        for ch in value {
            switch ch {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(ch)
            }
        }
        return out + "\""
    }
}
