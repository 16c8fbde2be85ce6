// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization

/// How work the server runs in a task answers its request: a whole response (`respond`), or a
/// stream started when the work has something to say (`startStream`: the head, then one chunk
/// per `write`). The one streaming primitive of the HTTP server: server-sent events are written
/// by the task that produces them, so a stream costs its request's task and nothing more, and a
/// stream whose first reply is an error can still answer with a plain error response. An alarm
/// on the loop (a first-reply grace, a keep-alive) may start the stream or write to it too.
///
/// The server ends the response when the work returns: a stream gets its last chunk; work that
/// answered nothing gets 500. A write waits while more than the server's stream buffer is
/// unsent (a client that reads slowly slows the stream, it does not grow appd's memory) and
/// throws once the client is gone, stopped reading for longer than the write timeout, or the
/// response has no body (a HEAD, a stream refused at the server's limit).
public final class HTTPResponder: Sendable {
    enum Phase: Equatable {
        case waiting
        case whole
        case streaming
        /// Answered without a body to write (a HEAD, a refusal, a closed connection).
        case noBody
        case ended
    }

    private struct State {
        var phase = Phase.waiting
        var decorations: [@Sendable (inout HTTPResponse, Bool) -> Void] = []
        var endings: [@Sendable (Bool) -> Void] = []
        /// A stream's head was decorated (the endings are told so).
        var streamed = false
        /// The server's task for the request, and whether `cancelWork` came before it.
        var task: Task<Void, Never>?
        var cancelled = false
    }

    /// nil: nowhere to answer (every write throws, `respond` does nothing).
    let connection: HTTPServerConnection?
    let server: HTTPServer
    private let state = Mutex(State())

    init(connection: HTTPServerConnection?, server: HTTPServer) {
        self.connection = connection
        self.server = server
    }

    /// Changes the response as it starts (headers, counting, an access line): the `Bool` says
    /// whether it is a stream's head. Added before the work answers; the last added runs first.
    public func decorate(_ change: @escaping @Sendable (inout HTTPResponse, _ streamed: Bool) -> Void) {
        state.withLock { $0.decorations.insert(change, at: 0) }
    }

    /// Runs once the response has ended (the `Bool`: whether it was a stream).
    public func onEnd(_ action: @escaping @Sendable (_ streamed: Bool) -> Void) {
        state.withLock { $0.endings.append(action) }
    }

    /// Answers with a whole response; false when the response has started already.
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool {
        begin(response, streamed: false) != nil
    }

    /// Starts a streamed response with `head`'s status and headers (its body is ignored); true
    /// when the stream is open for writes, also when it was started before. False when a whole
    /// response went out instead, or the stream has nowhere to go.
    @discardableResult
    public func startStream(_ head: HTTPResponse) -> Bool {
        switch begin(head, streamed: true) {
        case .streaming?: true
        case nil: phase == .streaming
        default: false
        }
    }

    /// Cancels the work (the server's task for the request): for work whose caller has been
    /// answered already (a deadline its transport keeps, `KeptDeadline`).
    public func cancelWork() {
        state.withLock { s in
            s.cancelled = true
            return s.task
        }?.cancel()
    }

    /// The server's task for the request (set as it starts it).
    func attach(_ task: Task<Void, Never>) {
        if state.withLock({ s in
            s.task = task
            return s.cancelled
        }) {
            task.cancel()
        }
    }

    /// Answers with `response`: whole, or, when it has a `stream` function, its head at once
    /// and then what the function writes (run even when the stream has nowhere to go, to its
    /// first write, so whatever it holds is released).
    func deliver(_ response: HTTPResponse) async {
        guard let stream = response.stream else {
            respond(response)
            return
        }
        startStream(response)
        await stream(self)
    }

    /// Whether a response (whole or streamed) has started.
    public var hasStarted: Bool { phase != .waiting }

    var phase: Phase { state.withLock { $0.phase } }

    /// Runs the decorations and queues the response under the lock, so a reply and an alarm
    /// that start it at once cannot both, and nothing is written before the head. A stream the
    /// server has no place for is answered 503 instead — decorated as the whole response it is
    /// (its CORS headers, its count and access line say 503, not the stream's 200). nil: it had
    /// started before.
    private func begin(_ response: HTTPResponse, streamed: Bool) -> Phase? {
        state.withLock { s -> Phase? in
            guard s.phase == .waiting else { return nil }
            var (decorated, streams) = (response, streamed)
            if streamed, !server.reserveStream(on: connection) { (decorated, streams) = (HTTPServer.streamsBusy, false) }
            for change in s.decorations { change(&decorated, streams) }
            let phase = server.begin(decorated, streamed: streams, on: connection)
            // Refused, the work's writes find no stream (as when its client has gone).
            s.phase = streamed && !streams ? .noBody : phase
            s.streamed = streams
            return s.phase
        }
    }

    /// One chunk of the stream; waits while the client is a stream buffer behind.
    public func write(_ bytes: [UInt8]) async throws(HTTPStreamClosed) {
        guard let connection, phase == .streaming else { throw HTTPStreamClosed() }
        guard !bytes.isEmpty else { return }
        try await server.enqueue(Self.chunk(bytes), on: connection)
    }

    public func write(_ text: String) async throws(HTTPStreamClosed) { try await write(Array(text.utf8)) }

    /// Queues a chunk without waiting, from any thread (a publisher's: the fan-out path; an
    /// alarm's), unless the client has the stream buffer's worth unread, has gone, or the stream
    /// has not started: false then, and nothing was written (use `write`).
    public func writeIfBelowHighWater(_ bytes: [UInt8]) -> Bool {
        writeIfBelowHighWater(count: bytes.count) { $0 += bytes }
    }

    /// `writeIfBelowHighWater(_:)` for a chunk of `count` bytes that `write` appends itself,
    /// straight into the connection's output buffer: a fan-out frames one event for each of its
    /// subscribers with no array of its own per subscriber. `write` appends exactly `count`
    /// bytes (the chunk's head says how many follow).
    public func writeIfBelowHighWater(count: Int, _ write: (inout [UInt8]) -> Void) -> Bool {
        guard let connection, count > 0, phase == .streaming else { return false }
        return connection.channel.writeIfBelowHighWater { Self.appendChunk(count: count, to: &$0, write) }
    }

    /// The work has returned (the server's task): ends a stream, answers work that answered
    /// nothing with 500, then runs the endings.
    func end() {
        if phase == .waiting {
            respond(HTTPResponse.refusal(500, "io.appd.Bus.InternalError", reason: "the handler gave no response"))
        }
        let (streaming, streamed, endings) = state.withLock { s -> (Bool, Bool, [@Sendable (Bool) -> Void]) in
            defer { s.phase = .ended }
            return (s.phase == .streaming, s.streamed, s.endings)
        }
        if streaming, let connection { server.endStream(on: connection) }
        for action in endings { action(streamed) }
    }

    /// One chunk of the chunked transfer coding.
    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 20)
        appendChunk(count: bytes.count, to: &out) { $0 += bytes }
        return out
    }

    /// A chunk of `count` bytes (RFC 9112 §7.1): its size in hex, CR LF, what `write` appends, CR LF.
    static func appendChunk(count: Int, to out: inout [UInt8], _ write: (inout [UInt8]) -> Void) {
        let hex: StaticString = "0123456789abcdef"
        var shift = max(0, (Int.bitWidth - count.leadingZeroBitCount + 3) / 4 - 1) * 4
        while shift >= 0 {
            out.append(hex.utf8Start[(count >> shift) & 0xF])
            shift -= 4
        }
        out.append(13)
        out.append(10)
        let start = out.count
        write(&out)
        assert(out.count - start == count, "a chunk of \(out.count - start) bytes under a head that says \(count)")
        out.append(13)
        out.append(10)
    }
}

/// The client of a streamed response went away or stopped reading.
public struct HTTPStreamClosed: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the client closed the stream or stopped reading" }
}
