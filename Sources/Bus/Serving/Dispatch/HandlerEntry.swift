// SPDX-License-Identifier: Apache-2.0
/// A registered handler, seen through type erasure so the wire can call it with JSON.
protocol HandlerEntry: Sendable {
    var method: String { get }
    var requirements: [Requirement] { get }
    /// What its calls go through, set when it is installed (`CommandBus.install`); nil before.
    var plan: CallPlan? { get set }
    var streaming: Bool { get }
    /// Whether a plain call (one reply) is answered too.
    var answersPlainCalls: Bool { get }
    /// Whether its replies are encoded from Swift types (whose agreement with the IDL the
    /// contract tests check), not JSON from elsewhere (an external plugin, a raw handler).
    var typed: Bool { get }
    /// Runs the handler for a single reply, decoding and encoding JSON.
    func callJSON(_ envelope: Envelope, _ parameters: JSONValue) async throws -> JSONValue
    /// The same, with the reply encoded to its JSON bytes (a typed reply straight to bytes).
    func callEncoded(_ envelope: Envelope, _ parameters: JSONValue) async throws -> [UInt8]
    /// Whether it is a handler that may answer without waiting (`CommandBus.answer`): then
    /// `callInline` and `callInlineEncoded` try it on the caller's thread. (Asked on every
    /// call: a property, not a closure the caller would allocate each time.)
    var answersInline: Bool { get }
    /// Runs a handler that may answer without waiting, decoding and encoding JSON (only if
    /// `answersInline`): nil when this call must wait (then `callJSON` answers it).
    func callInline(_ envelope: Envelope, _ parameters: JSONValue) throws -> JSONValue?
    /// `callInline`, with the reply encoded to its JSON bytes.
    func callInlineEncoded(_ envelope: Envelope, _ parameters: JSONValue) throws -> [UInt8]?
    /// Starts the handler's stream, decoding and encoding JSON.
    func streamJSON(_ envelope: Envelope, _ parameters: JSONValue, capacity: Int, deferred: Bool) throws -> ReplyStream<JSONValue>
}

extension HandlerEntry {
    var answersPlainCalls: Bool { !streaming }
    var typed: Bool { true }
    var answersInline: Bool { false }
    func callInline(_ envelope: Envelope, _ parameters: JSONValue) throws -> JSONValue? { nil }
    func callInlineEncoded(_ envelope: Envelope, _ parameters: JSONValue) throws -> [UInt8]? { nil }

    func callEncoded(_ envelope: Envelope, _ parameters: JSONValue) async throws -> [UInt8] {
        JSONWriter.bytes(try await callJSON(envelope, parameters))
    }

    /// The call's parameters decoded with the handler's decoder (`JSONValue.decoder(for:)`, made
    /// when the handler is); no parameters (null) are an empty object.
    func decodeParameters<C: Decodable>(_ decode: (JSONValue) throws -> C, _ parameters: JSONValue) throws -> C {
        do {
            return try decode(parameters == .null ? .object([:]) : parameters)
        } catch let error as DecodingError {
            throw InvalidParameters(method: method, decoding: error)
        }
    }
}

/// The handler of a typed `Command`.
struct CommandHandler<C: Command>: HandlerEntry {
    var plan: CallPlan?
    let body: @Sendable (C, Envelope) async throws -> C.Reply
    /// The parameters' decoder and the reply's encoder, chosen once (`JSONValue.decoder(for:)`,
    /// `JSONBytesEncoder.encoder(for:)`).
    let decodeCommand = JSONValue.decoder(for: C.self)
    let encodeReply = JSONBytesEncoder.encoder(for: C.Reply.self)
    var method: String { C.method }
    var requirements: [Requirement] { C.requirements }
    var streaming: Bool { false }

    func callJSON(_ envelope: Envelope, _ parameters: JSONValue) async throws -> JSONValue {
        let command = try decodeParameters(decodeCommand, parameters)
        return try JSONValue(encoding: try await body(command, envelope))
    }

    func callEncoded(_ envelope: Envelope, _ parameters: JSONValue) async throws -> [UInt8] {
        let command = try decodeParameters(decodeCommand, parameters)
        return try encodeReply(try await body(command, envelope))
    }

    func streamJSON(_ envelope: Envelope, _ parameters: JSONValue, capacity: Int, deferred: Bool) throws -> ReplyStream<JSONValue> {
        throw WrongCallShape(method: method, streaming: false)
    }
}

/// The handler of a typed `Command` that answers without waiting (`CommandBus.answer(_:handler:)`:
/// `now` always answers) or usually does (`answer(_:now:later:)`: `now` answers from what it
/// holds in memory or returns nil, then `later` answers).
struct InlineCommandHandler<C: Command>: HandlerEntry {
    var plan: CallPlan?
    let now: @Sendable (C, Envelope) throws -> C.Reply?
    let later: @Sendable (C, Envelope) async throws -> C.Reply
    /// The parameters' decoder and the reply's encoder, chosen once (`JSONValue.decoder(for:)`,
    /// `JSONBytesEncoder.encoder(for:)`).
    let decodeCommand = JSONValue.decoder(for: C.self)
    let encodeReply = JSONBytesEncoder.encoder(for: C.Reply.self)
    var method: String { C.method }
    var requirements: [Requirement] { C.requirements }
    var streaming: Bool { false }

    func reply(_ command: C, _ envelope: Envelope) async throws -> C.Reply {
        if let reply = try now(command, envelope) { return reply }
        return try await later(command, envelope)
    }

    func callJSON(_ envelope: Envelope, _ parameters: JSONValue) async throws -> JSONValue {
        try JSONValue(encoding: try await reply(try decodeParameters(decodeCommand, parameters), envelope))
    }

    func callEncoded(_ envelope: Envelope, _ parameters: JSONValue) async throws -> [UInt8] {
        try encodeReply(try await reply(try decodeParameters(decodeCommand, parameters), envelope))
    }

    var answersInline: Bool { true }

    // `if let`, not `Optional.map`: called through `any HandlerEntry`, this generic code is not
    // specialised, and an unspecialised `map` showed up in profiles of `Daemon.Ping`.
    func callInline(_ envelope: Envelope, _ parameters: JSONValue) throws -> JSONValue? {
        guard let reply = try now(try decodeParameters(decodeCommand, parameters), envelope) else { return nil }
        return try JSONValue(encoding: reply)
    }

    func callInlineEncoded(_ envelope: Envelope, _ parameters: JSONValue) throws -> [UInt8]? {
        guard let reply = try now(try decodeParameters(decodeCommand, parameters), envelope) else { return nil }
        return try encodeReply(reply)
    }

    func streamJSON(_ envelope: Envelope, _ parameters: JSONValue, capacity: Int, deferred: Bool) throws -> ReplyStream<JSONValue> {
        throw WrongCallShape(method: method, streaming: false)
    }
}

/// The handler of a typed `StreamingCommand`.
struct StreamingHandler<C: StreamingCommand>: HandlerEntry {
    var plan: CallPlan?
    let body: @Sendable (C, Envelope, ReplyWriter<C.Reply>) async throws -> C.Reply
    let requirements: [Requirement]
    let decodeCommand = JSONValue.decoder(for: C.self)
    var method: String { C.method }
    var streaming: Bool { true }

    func start(_ command: C, _ envelope: Envelope, capacity: Int) -> ReplyStream<C.Reply> {
        ReplyChannel<C.Reply>.start(capacity: capacity) { writer in try await body(command, envelope, writer) }
    }

    func callJSON(_ envelope: Envelope, _ parameters: JSONValue) async throws -> JSONValue {
        throw WrongCallShape(method: method, streaming: true)
    }

    func streamJSON(_ envelope: Envelope, _ parameters: JSONValue, capacity: Int, deferred: Bool) throws -> ReplyStream<JSONValue> {
        let command = try decodeParameters(decodeCommand, parameters)
        // One producer task that encodes as it sends (a mapped stream would need a second).
        return ReplyChannel<JSONValue>.start(capacity: capacity, deferred: deferred) { [body] json in
            // A handler whose replies are JSON already (Bus.Subscribe) writes to the stream as
            // is: no second encoding, and its direct path (fan-out) goes through no wrapper.
            let reply = try await body(command, envelope, Self.writer(into: json))
            return try (reply as? JSONValue) ?? JSONValue(encoding: reply)
        }
    }
}

extension StreamingHandler {
    /// The handler's writer onto a JSON stream (synchronous, so its temporaries stay out of the
    /// producer's async frame, which every open stream holds).
    static func writer(into json: ReplyWriter<JSONValue>) -> ReplyWriter<C.Reply> {
        json as? ReplyWriter<C.Reply> ?? ReplyWriter(into: json) { try JSONValue(encoding: $0) }
    }
}

/// A handler that works on JSON directly (external plugins, proxies), with its requirements
/// given at registration.
struct RawHandler: HandlerEntry {
    var plan: CallPlan?
    let method: String
    let requirements: [Requirement]
    let single: (@Sendable (Envelope, JSONValue) async throws -> JSONValue)?
    let stream: (@Sendable (Envelope, JSONValue, ReplyWriter<JSONValue>) async throws -> JSONValue)?
    var streaming: Bool { stream != nil }
    var answersPlainCalls: Bool { single != nil }
    var typed: Bool { false }

    func callJSON(_ envelope: Envelope, _ parameters: JSONValue) async throws -> JSONValue {
        guard let single else { throw WrongCallShape(method: method, streaming: true) }
        return try await single(envelope, parameters)
    }

    func streamJSON(_ envelope: Envelope, _ parameters: JSONValue, capacity: Int, deferred: Bool) throws -> ReplyStream<JSONValue> {
        guard let stream else { throw WrongCallShape(method: method, streaming: false) }
        return ReplyChannel<JSONValue>.start(capacity: capacity, deferred: deferred) { writer in try await stream(envelope, parameters, writer) }
    }
}

extension InvalidParameters {
    /// Names the field a decoding error points at, so the caller knows what to fix.
    init(method: String, decoding error: DecodingError) {
        func path(_ context: DecodingError.Context, appending key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            return keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            self.init(method: method, parameter: path(context, appending: key), reason: "missing")
        case .typeMismatch(let type, let context):
            self.init(method: method, parameter: path(context), reason: "expected \(type)")
        case .valueNotFound(let type, let context):
            self.init(method: method, parameter: path(context), reason: "expected \(type), got null")
        case .dataCorrupted(let context):
            self.init(method: method, parameter: path(context), reason: context.debugDescription)
        @unknown default:
            self.init(method: method, parameter: "", reason: "\(error)")
        }
    }
}
