// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes one line per record to a file descriptor: `level label: message key=value …`.
///
/// Under systemd (`journald` true) each line starts with the kernel-style priority prefix
/// `<N>` that journald reads as the record's priority.
public final class StreamLogHandler: LogHandler {
    private let fd: Int32
    private let journald: Bool
    /// Written before each line (the unbootstrapped default's "[log] ").
    private let prefix: String
    /// Serialises writes so lines from concurrent tasks never interleave.
    private let lock: Locked<Void>

    public init(fd: Int32, journald: Bool, prefix: String = "") {
        self.fd = fd
        self.journald = journald
        self.prefix = prefix
        self.lock = Locked(())
    }

    /// A handler on stderr that uses journald prefixes when stderr is connected to the journal.
    public static func standardError() -> StreamLogHandler {
        StreamLogHandler(fd: 2, journald: getenv("JOURNAL_STREAM") != nil)
    }

    public func log(_ record: LogRecord) {
        let line = prefix + Self.line(record, journald: journald)
        _ = lock.withLock { _ in FileDescriptorWriter.writeAll(fd, Array(line.utf8)) }
    }

    /// One record as its line, newline included: `level label: message key=value …`, with the
    /// journald priority prefix when `journald`.
    public static func line(_ record: LogRecord, journald: Bool) -> String {
        var bytes: [UInt8] = []
        write(record, journald: journald, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends a record's line (`line`) to `out`: bytes appended as they are, no intermediate
    /// strings (the log writer formats every line of a busy server).
    public static func write(_ record: LogRecord, journald: Bool, into out: inout [UInt8]) {
        if journald {
            out.append(UInt8(ascii: "<"))
            out.append(UInt8(ascii: "0") + UInt8(priority(record.level)))
            out.append(UInt8(ascii: ">"))
        }
        append(record.level.description, to: &out)
        out.append(UInt8(ascii: " "))
        append(record.label, to: &out)
        out += ": ".utf8
        // Control characters are shown, never written: a message or value carrying text from
        // outside (a plugin's output, a client's input) cannot end the line, rewrite it (CR,
        // ANSI escapes) or pass for a line of appd's own.
        if isPlainASCII(record.message) { append(record.message, to: &out) } else { append(record.message.escapingControlCharacters(), to: &out) }
        // In key order already (`LogMetadata` keeps it).
        for (key, value) in record.metadata {
            out.append(UInt8(ascii: " "))
            append(key, to: &out)
            out.append(UInt8(ascii: "="))
            append(quoted(value), to: &out)
        }
        out.append(UInt8(ascii: "\n"))
    }

    /// `text`'s bytes appended from its contiguous storage (not through the generic
    /// `append(contentsOf:)` of a `UTF8View`).
    @inline(__always)
    static func append(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// Printable ASCII (space included) only: nothing to escape, decided byte by byte.
    static func isPlainASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
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
