#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
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
        StreamLogHandler(fd: 2, journald: getenv("JOURNAL_STREAM") != nil)
    }

    public func log(_ record: LogRecord) {
        let line = Self.line(record, journald: journald)
        _ = lock.withLock { _ in FileDescriptorWriter.writeAll(fd, Array(line.utf8)) }
    }

    /// One record as its line, newline included: `level label: message key=value …`, with the
    /// journald priority prefix when `journald`.
    public static func line(_ record: LogRecord, journald: Bool) -> String {
        var line = journald ? "<\(priority(record.level))>" : ""
        // Control characters are shown, never written: a message or value carrying text from
        // outside (a plugin's output, a client's input) cannot end the line, rewrite it (CR,
        // ANSI escapes) or pass for a line of appd's own.
        line += "\(record.level) \(record.label): \(record.message.escapingControlCharacters())"
        for key in record.metadata.keys.sorted() {
            line += " \(key)=\(quoted(record.metadata[key] ?? ""))"
        }
        line += "\n"
        return line
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
        // Nearly every value (a method, a status, an id, a number) is printable ASCII without a
        // space, quote or '=': as it is, decided byte by byte (no Unicode property lookups).
        if !value.isEmpty, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") }) {
            return value
        }
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isControl || $0.properties.isWhitespace }
        guard needsQuotes else { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if scalar.isControl { out += "\\u{" + String(scalar.value, radix: 16) + "}" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}
