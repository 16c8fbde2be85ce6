// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The command half of the bus: each method's one handler and the gate chain every call
/// passes through on its way there. Commands are a direct async call through the gates into
/// the handler.
///
/// It is what a varlink server dispatches to (`VarlinkDispatcher`), in appd and in an external
/// plugin's process alike; appd's `EventBus` is a `CommandBus` that also fans out events. It is
/// open only for that: every stored property is a constant of a `Sendable` type or a lock.
open class CommandBus: @unchecked Sendable {  // safe: every stored property is a constant of a Sendable type or a Mutex/Atomic
    public let chain: GateChain
    /// Deadline applied to calls that do not give one; nil means none.
    public let defaultTimeout: Duration?
    /// Replies a streaming handler may run ahead of its consumer before it waits.
    public let streamCapacity: Int
    package let logger: Logger
    /// `logger`, as every envelope of this bus holds it (`SharedLogger`).
    private let sharedLogger: SharedLogger
    let handlers = Mutex<[String: any HandlerEntry]>([:])
    /// Bumped whenever a handler is added or removed: what a resolved route (`VarlinkRoute`)
    /// checks to know its handler is still the one registered.
    let handlersGeneration = Atomic<UInt64>(0)
    package let commandCount = Atomic<Int>(0)

    /// A bus whose gate chain is fixed from here on, in the gates' positions (outermost first;
    /// gates at one position in the order given). An external plugin's has none: appd's gates
    /// ran before the call reached it.
    public init(gates: [any Gate] = [], defaultTimeout: Duration? = nil, streamCapacity: Int = 64, logger: Logger = Logger(label: "appd.bus")) {
        self.chain = GateChain(GatePosition.sorted(gates))
        self.defaultTimeout = defaultTimeout
        self.streamCapacity = max(1, streamCapacity)
        self.logger = logger
        self.sharedLogger = SharedLogger(logger)
    }
}

/// What the bus knows about a registered method.
public struct MethodInfo: Sendable, Hashable {
    public let method: String
    public let requirements: [Requirement]
    public let streaming: Bool
    /// A streaming method that also answers a plain call with one reply (external plugins'
    /// methods: varlink's IDL does not say which stream).
    public var answersPlainCalls: Bool = false
    /// Its replies are encoded from Swift types (see `VarlinkDispatcher.checksTypedReplies`).
    public var typed: Bool = false
}

extension MethodInfo {
    init(of entry: any HandlerEntry) {
        self.init(
            method: entry.method, requirements: entry.requirements, streaming: entry.streaming, answersPlainCalls: entry.answersPlainCalls, typed: entry.typed)
    }
}

extension CommandBus {
    // MARK: Registration

    /// Registers the one handler of a command.
    public func register<C: Command>(
        _ type: C.Type = C.self, handler: @escaping @Sendable (C, Envelope) async throws -> C.Reply
    ) throws(DuplicateHandler) {
        try install(CommandHandler<C>(body: handler))
    }

    /// Registers the one handler of a command that never waits: computed from its parameters
    /// (and what it can read without waiting). A call no gate has anything to do for is answered
    /// on the caller's thread, with no task and no deadline race (a handler that cannot suspend
    /// runs to its end either way: a deadline could not stop it); otherwise it runs behind the
    /// gates like any other.
    /// (A name of its own, not a `register` overload: a trailing closure without `await` would
    /// pick it silently.)
    public func answer<C: Command>(
        _ type: C.Type = C.self, handler: @escaping @Sendable (C, Envelope) throws -> C.Reply
    ) throws(DuplicateHandler) {
        try install(InlineCommandHandler<C>(now: handler, later: handler))
    }

    /// Registers the one handler of a command that usually answers without waiting: `now`
    /// answers from what it holds in memory (a cache), or returns nil when it must wait; then
    /// `later` answers. A call whose gates all decide from memory (`Gate.deciding`) and that
    /// `now` answers is answered on the caller's thread, as `answer(_:handler:)`'s are; any other
    /// runs behind the gates like any other call, `now` first.
    public func answer<C: Command>(
        _ type: C.Type = C.self, now: @escaping @Sendable (C, Envelope) throws -> C.Reply?,
        later: @escaping @Sendable (C, Envelope) async throws -> C.Reply
    ) throws(DuplicateHandler) {
        try install(InlineCommandHandler<C>(now: now, later: later))
    }

    /// Registers the one handler of a streaming command: it sends intermediate replies through
    /// the writer and returns the final one.
    /// `requirements` replaces the type's own when the configuration decides them (a meter
    /// that can be turned off, say).
    public func register<C: StreamingCommand>(
        _ type: C.Type = C.self, requirements: [Requirement]? = nil,
        handler: @escaping @Sendable (C, Envelope, ReplyWriter<C.Reply>) async throws -> C.Reply
    ) throws(DuplicateHandler) {
        try install(StreamingHandler<C>(body: handler, requirements: requirements ?? C.requirements))
    }

    /// Registers a JSON handler for a method known only by name (external plugins).
    public func registerRaw(
        method: String, requirements: [Requirement],
        handler: @escaping @Sendable (Envelope, JSONValue) async throws -> JSONValue
    ) throws(DuplicateHandler) {
        try install(RawHandler(method: method, requirements: requirements, single: handler, stream: nil))
    }

    /// Registers a streaming JSON handler for a method known only by name.
    public func registerRawStream(
        method: String, requirements: [Requirement],
        handler: @escaping @Sendable (Envelope, JSONValue, ReplyWriter<JSONValue>) async throws -> JSONValue
    ) throws(DuplicateHandler) {
        try install(RawHandler(method: method, requirements: requirements, single: nil, stream: handler))
    }

    /// Registers a JSON method that answers both ways: once when called plainly, as a stream
    /// when called with `more` (a proxy to a server whose IDL does not say which it is).
    public func registerRaw(
        method: String, requirements: [Requirement],
        single: @escaping @Sendable (Envelope, JSONValue) async throws -> JSONValue,
        stream: @escaping @Sendable (Envelope, JSONValue, ReplyWriter<JSONValue>) async throws -> JSONValue
    ) throws(DuplicateHandler) {
        try install(RawHandler(method: method, requirements: requirements, single: single, stream: stream))
    }

    /// Removes a method's handler; removing a missing one is not an error.
    public func unregister(method: String) {
        _ = handlers.withLock { $0.removeValue(forKey: method) }
        handlersGeneration.add(1, ordering: .releasing)
    }

    /// Removes every handler of an interface (`io.appd.Todos`): what a plugin does when it stops.
    public func unregister(interface: String) {
        let prefix = interface + "."
        handlers.withLock { table in
            for method in table.keys where method.hasPrefix(prefix) { table[method] = nil }
        }
        handlersGeneration.add(1, ordering: .releasing)
    }

    /// Requirements and shape of a registered method.
    public func methodInfo(_ method: String) -> MethodInfo? {
        handler(method).map(MethodInfo.init(of:))
    }

    /// The handler registered for `method`, if any.
    func handler(_ method: String) -> (any HandlerEntry)? { handlers.withLock { $0[method] } }

    /// Every registered method name, sorted.
    public var methods: [String] { handlers.withLock { $0.keys.sorted() } }

    private func install(_ entry: some HandlerEntry) throws(DuplicateHandler) {
        var entry = entry
        entry.plan = CallPlan(requirements: entry.requirements, chain: chain)
        let added = handlers.withLock { table -> Bool in
            guard table[entry.method] == nil else { return false }
            table[entry.method] = entry
            return true
        }
        guard added else { throw DuplicateHandler(method: entry.method) }
        handlersGeneration.add(1, ordering: .releasing)
    }

    // MARK: Calls

    /// Sends a typed command through the gates to its handler and returns the reply.
    public func send<C: Command>(
        _ command: C, as caller: Caller = .daemon, timeout: Duration? = nil, causedBy cause: Envelope? = nil,
        idempotencyKey: IdempotencyKey? = nil
    ) async throws -> C.Reply {
        // A call a keyed call's handler makes is a call of its own: its writes do not carry the
        // outer call's key.
        if IdempotencyRecord.current != nil {
            return try await IdempotencyRecord.$current.withValue(nil) {
                try await send(command, as: caller, timeout: timeout, causedBy: cause, idempotencyKey: idempotencyKey)
            }
        }
        let (entry, envelope) = try prepare(C.method, caller, timeout, cause, key: idempotencyKey) { try JSONValue(encoding: command) }
        let gates = gates(of: entry)
        if let typed = entry as? CommandHandler<C> {
            // The hot path: a direct nest of async calls, no task, no closure on the heap.
            guard envelope.deadline != nil else {
                return try await gates.run(envelope) { inner in try await handling(inner) { try await typed.body(command, inner) } }
            }
            return try await dispatch(envelope) { env in
                try await gates.run(env) { inner in try await handling(inner) { try await typed.body(command, inner) } }
            }
        }
        if let typed = entry as? InlineCommandHandler<C>, !gates.applies(to: envelope), let reply = try typed.now(command, envelope) {
            return reply
        }
        let parameters = try JSONValue(encoding: command)
        return try await dispatch(envelope) { env in
            try await gates.run(env) { inner in try await handling(inner) { try await entry.callJSON(inner, parameters) } }
        }.decode(as: C.Reply.self)
    }

    /// Sends a typed streaming command; the gates run before the stream starts.
    public func stream<C: StreamingCommand>(
        _ command: C, as caller: Caller = .daemon, timeout: Duration? = nil, causedBy cause: Envelope? = nil
    ) async throws -> ReplyStream<C.Reply> {
        let (entry, envelope) = try prepare(C.method, caller, timeout, cause)
        let (gates, capacity) = (gates(of: entry), streamCapacity)
        if let typed = entry as? StreamingHandler<C> {
            return try await dispatch(envelope) { env in
                try await gates.run(env) { inner in typed.start(command, inner, capacity: capacity) }
            }
        }
        let parameters = try JSONValue(encoding: command)
        return try await dispatch(envelope) { env in
            try await gates.run(env) { inner in try entry.streamJSON(inner, parameters, capacity: capacity, deferred: false) }
        }.map(capacity: capacity) { try $0.decode(as: C.Reply.self) }
    }

    /// Type-erased call by method name with JSON parameters: the same gates and handler as `send`.
    public func call(
        method: String, parameters: JSONValue, as caller: Caller = .daemon, timeout: Duration? = nil,
        causedBy cause: Envelope? = nil, idempotencyKey: IdempotencyKey? = nil
    ) async throws -> JSONValue {
        try await call(method: method, handler: nil, parameters: parameters, as: caller, timeout: timeout, causedBy: cause, idempotencyKey: idempotencyKey)
    }

    /// `call` with the method's handler resolved already (a transport's route): no lookup by name.
    func call(
        method: String, handler resolved: (any HandlerEntry)?, parameters: JSONValue, as caller: Caller, timeout: Duration?,
        causedBy cause: Envelope? = nil, idempotencyKey: IdempotencyKey?
    ) async throws -> JSONValue {
        if IdempotencyRecord.current != nil {
            return try await IdempotencyRecord.$current.withValue(nil) {
                try await call(method: method, handler: resolved, parameters: parameters, as: caller, timeout: timeout, causedBy: cause, idempotencyKey: idempotencyKey)
            }
        }
        let (entry, envelope) = try prepare(method, caller, timeout, cause, key: idempotencyKey, handler: resolved) { parameters }
        let gates = gates(of: entry)
        if entry.answersInline, !gates.applies(to: envelope), let reply = try entry.callInline(envelope, parameters) { return reply }
        return try await dispatch(envelope) { env in
            try await gates.run(env) { inner in try await handling(inner) { try await entry.callJSON(inner, parameters) } }
        }
    }

    /// Answers a plain call at once, on the caller's thread, when its handler need not wait
    /// (`answer(_:handler:)`, or `answer(_:now:later:)` when `now` answers) and every gate that
    /// applies decides from memory (`GateChain.decideNow`): the reply, or nil when the call is
    /// not one of those — `call` answers it as usual then (see `decideNow` for the one race in
    /// which a gate decided before). A
    /// transport's loop answers such calls where it reads them (no task, no hop). `validate`
    /// (the transport's check of the parameters) runs first once the handler is one of those.
    /// The reply comes as its JSON bytes. `entry` is the method's handler, resolved by the
    /// dispatcher's route.
    func answerNow(_ entry: any HandlerEntry, parameters: JSONValue, as caller: Caller, validate: () throws -> Void) throws -> [UInt8]? {
        guard IdempotencyRecord.current == nil, entry.answersInline else { return nil }
        try validate()
        // Counted once answered here, refusals included; not when `call` answers it after all.
        var answered = true
        defer { if answered { commandCount.add(1, ordering: .relaxed) } }
        var envelope = try self.envelope(entry, caller, nil, nil, key: nil)
        // The gates decide in line or not at all (a refusal is this call's answer); a handler
        // that must wait after all (`answer(_:now:later:)`) leaves the call to `call` too.
        guard try gates(of: entry).decideNow(&envelope), let reply = try entry.callInlineEncoded(envelope, parameters) else {
            answered = false
            return nil
        }
        return reply
    }

    /// `call` without an idempotency key, its reply as JSON bytes: a typed handler's reply is
    /// encoded once, straight to what the wire sends (`JSONBytesEncoder`).
    public func callEncoded(
        method: String, parameters: JSONValue, as caller: Caller = .daemon, timeout: Duration? = nil, causedBy cause: Envelope? = nil
    ) async throws -> [UInt8] {
        try await callEncoded(method: method, handler: nil, parameters: parameters, as: caller, timeout: timeout, causedBy: cause)
    }

    /// `callEncoded` with the method's handler resolved already (a transport's route).
    func callEncoded(
        method: String, handler resolved: (any HandlerEntry)?, parameters: JSONValue, as caller: Caller, timeout: Duration?, causedBy cause: Envelope? = nil
    ) async throws -> [UInt8] {
        if IdempotencyRecord.current != nil {
            return try await IdempotencyRecord.$current.withValue(nil) {
                try await callEncoded(method: method, handler: resolved, parameters: parameters, as: caller, timeout: timeout, causedBy: cause)
            }
        }
        let (entry, envelope) = try prepare(method, caller, timeout, cause, handler: resolved)
        let gates = gates(of: entry)
        if entry.answersInline, !gates.applies(to: envelope), let reply = try entry.callInlineEncoded(envelope, parameters) { return reply }
        return try await dispatch(envelope) { env in
            try await gates.run(env) { inner in try await entry.callEncoded(inner, parameters) }
        }
    }

    /// Type-erased streaming call by method name: the same gates and handler as `stream`.
    /// `deferred`: the handler does not start; the caller runs it in its own task
    /// (`ReplyStream.run(into:)`), as a transport that writes replies as they come does.
    public func callStream(
        method: String, parameters: JSONValue, as caller: Caller = .daemon, timeout: Duration? = nil,
        causedBy cause: Envelope? = nil, deferred: Bool = false
    ) async throws -> ReplyStream<JSONValue> {
        let (entry, envelope) = try prepare(method, caller, timeout, cause)
        let (gates, capacity) = (gates(of: entry), streamCapacity)
        return try await dispatch(envelope) { env in
            try await gates.run(env) { inner in try entry.streamJSON(inner, parameters, capacity: capacity, deferred: deferred) }
        }
    }

    /// Finds the handler (unless the caller resolved it: `handler`), denies what no gate can
    /// check, and builds the envelope.
    /// With a key, the command must declare `idempotent` and a gate must keep outcomes (the
    /// parameters, made only then, go with the key so the gate can tell a retry from a misuse).
    private func prepare(
        _ method: String, _ caller: Caller, _ timeout: Duration?, _ cause: Envelope?, key: IdempotencyKey? = nil,
        handler resolved: (any HandlerEntry)? = nil, parameters: () throws -> JSONValue = { .null }
    ) throws -> (any HandlerEntry, Envelope) {
        commandCount.add(1, ordering: .relaxed)
        guard let entry = resolved ?? handlers.withLock({ $0[method] }) else { throw NoHandler(method: method) }
        return (entry, try envelope(entry, caller, timeout, cause, key: key, parameters: parameters))
    }

    /// The envelope of a call to `entry`, after the checks every call gets.
    private func envelope(
        _ entry: any HandlerEntry, _ caller: Caller, _ timeout: Duration?, _ cause: Envelope?, key: IdempotencyKey?,
        parameters: () throws -> JSONValue = { .null }
    ) throws -> Envelope {
        let method = entry.method
        // The plan made when the handler was installed; one made here for a handler that was not.
        let plan = entry.plan ?? CallPlan(requirements: entry.requirements, chain: chain)
        let requirements = plan.requirements
        // A socket-only method does not exist for a caller from the network.
        if caller.remoteAddress != nil, requirements.contains(.socket) { throw MethodNotFound(method: method) }
        var idempotency: IdempotentRequest?
        if let key {
            guard requirements.contains(.idempotent), entry.answersPlainCalls else { throw IdempotencyNotSupported(method: method) }
            idempotency = IdempotentRequest(key: key, parameters: try parameters())
        }
        // `idempotent` needs its gate only when a key came with the call.
        if let missing = key == nil ? plan.uncovered : plan.uncoveredWithKey {
            throw RequirementUnavailable(method: method, requirement: missing)
        }
        let deadline = (timeout ?? defaultTimeout).map { ContinuousClock.now.advanced(by: $0) }
        return Envelope(
            name: method, requirements: requirements, caller: caller, deadline: deadline, causedBy: cause,
            logger: sharedLogger, idempotency: idempotency)
    }

    /// The gates a call of `entry` walks: its plan's (`CallPlan`), or the whole chain for a
    /// handler that has none.
    private func gates(of entry: any HandlerEntry) -> GateChain { entry.plan?.gates ?? chain }

    /// Runs the call directly, or against its deadline when it has one.
    private func dispatch<R: Sendable>(
        _ envelope: Envelope, _ body: @escaping @Sendable (Envelope) async throws -> R
    ) async throws -> R {
        guard let deadline = envelope.deadline else { return try await body(envelope) }
        let method = envelope.name
        if let kept = Deadline.current as? KeptDeadline, kept.take(for: method, due: deadline) {
            // Its transport keeps this call's deadline (answers the timeout, cancels this task):
            // the work runs right here, with no race and no task. Past the deadline, the caller
            // was told DeadlineExceeded, and so are the metrics and the log.
            let result: R
            do {
                result = try await body(envelope)
            } catch  where kept.expired {
                throw DeadlineExceeded(method: method)
            }
            if kept.expired { throw DeadlineExceeded(method: method) }
            return result
        }
        return try await withDeadline(deadline, timeoutError: { DeadlineExceeded(method: method) }) {
            try await body(envelope)
        }
    }
}

/// Runs a handler; for a keyed call, with its idempotency record as the task's (so the handler's
/// writes, and only they — not a gate's own, like a meter's — carry its key).
@inline(__always)
private func handling<R>(_ envelope: Envelope, _ body: () async throws -> R) async throws -> R {
    guard let record = envelope.idempotencyRecord else { return try await body() }
    return try await IdempotencyRecord.$current.withValue(record) { try await body() }
}
