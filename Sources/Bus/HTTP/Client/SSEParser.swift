// SPDX-License-Identifier: Apache-2.0
import BusCore
/// An incremental parser of Server-Sent Events (the WHATWG event-stream format): feed it bytes
/// as they arrive, split anywhere (inside a line, inside a UTF-8 character, between `\r` and
/// `\n`), and it returns each complete event's data. Comment lines (`:`) are skipped; `event`,
/// `id` and `retry` fields are read and ignored except `event`; lines end with LF, CRLF or CR.
public struct SSEParser: Sendable {
    public struct Event: Sendable, Equatable {
        public var event: String?
        public var data: String
    }

    /// A line longer than this (bytes) is an error: a stream that never ends a line would
    /// otherwise grow without bound.
    public var maxLineBytes: Int
    private var line: [UInt8] = []
    private var lastWasCR = false
    private var data: [String] = []
    private var eventName: String?
    private var hasData = false

    public init(maxLineBytes: Int = 1 << 20) { self.maxLineBytes = maxLineBytes }

    public struct LineTooLong: Error, CustomStringConvertible {
        public var description: String { "an event-stream line is longer than the limit" }
    }

    /// Consumes `bytes`; returns the events they complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(LineTooLong) -> [Event] {
        // One pass over contiguous bytes, not a generic iteration (called from another module,
        // `feed` is not specialized: each byte through the Sequence witnesses cost a malloc).
        let result: Result<[Event], LineTooLong>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(LineTooLong) in try feed(buffer: buffer) }
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(LineTooLong) in try feed(buffer: buffer) }
    }

    private mutating func feed(buffer bytes: UnsafeBufferPointer<UInt8>) throws(LineTooLong) -> [Event] {
        var events: [Event] = []
        for byte in bytes {
            if lastWasCR {
                lastWasCR = false
                if byte == 10 { continue }  // the LF of a CRLF
            }
            switch byte {
            case 13:
                lastWasCR = true
                endLine(into: &events)
            case 10:
                endLine(into: &events)
            default:
                guard line.count < maxLineBytes else { throw LineTooLong() }
                line.append(byte)
            }
        }
        return events
    }

    /// The stream ended: an event whose blank line never came is still delivered.
    public mutating func finish() -> [Event] {
        var events: [Event] = []
        if !line.isEmpty { endLine(into: &events) }
        dispatch(into: &events)
        return events
    }

    private mutating func endLine(into events: inout [Event]) {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            dispatch(into: &events)
            return
        }
        if line[0] == 58 { return }  // ':' comment
        let text = String(decoding: line, as: UTF8.self)
        let field: Substring, value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            var rest = text[text.index(after: colon)...]
            if rest.first == " " { rest = rest.dropFirst() }
            value = rest
        } else {
            field = text[...]
            value = ""
        }
        switch field {
        case "data":
            data.append(String(value))
            hasData = true
        case "event":
            eventName = String(value)
        default:
            break  // id, retry, unknown fields
        }
    }

    private mutating func dispatch(into events: inout [Event]) {
        defer {
            data.removeAll()
            eventName = nil
            hasData = false
        }
        guard hasData else { return }
        events.append(Event(event: eventName, data: data.joined(separator: "\n")))
    }
}
