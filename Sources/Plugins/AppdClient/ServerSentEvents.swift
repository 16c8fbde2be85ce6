// SPDX-License-Identifier: Apache-2.0
/// One server-sent event: its type (`reply`, `error`), its data, its id.
struct ServerSentEvent: Sendable, Equatable {
    var event = "message"
    var data = ""
    var id: String?
}

/// The `text/event-stream` parser (WHATWG HTML, "Parsing an event stream"): lines ending in
/// LF, CRLF or CR; `field: value`; a blank line dispatches; comment lines (`:`) are skipped.
/// Fed bytes as they arrive, in any split.
struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var pending = ServerSentEvent()
    private var hasData = false
    private var lastWasCR = false
    /// The most a line may hold before the stream is refused (a reply is far smaller).
    let maxLineBytes: Int

    init(maxLineBytes: Int = 16 << 20) { self.maxLineBytes = maxLineBytes }

    struct LineTooLong: Error {}

    /// The events completed by `bytes`.
    mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if lastWasCR {
                lastWasCR = false
                if byte == 0x0A { continue }
            }
            if byte == 0x0A || byte == 0x0D {
                lastWasCR = byte == 0x0D
                if let event = endLine() { events.append(event) }
                continue
            }
            line.append(byte)
            if line.count > maxLineBytes { throw LineTooLong() }
        }
        return events
    }

    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            defer {
                pending = ServerSentEvent(id: pending.id)
                hasData = false
            }
            return hasData ? pending : nil
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let text = String(decoding: line, as: UTF8.self)
        let field: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        } else {
            field = text[...]
            value = ""
        }
        switch field {
        case "event": pending.event = String(value)
        case "data":
            pending.data += hasData ? "\n" + value : String(value)
            hasData = true
        case "id" where !value.contains("\0"): pending.id = String(value)
        default: break
        }
        return nil
    }
}
