// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Routes varlink calls to the bus: checks the method against its interface's IDL, validates
/// the parameters, runs the call through the gates, and renders replies and typed errors.
///
/// It knows nothing about sockets, so tests can drive it directly; the server feeds it calls.
public final class VarlinkDispatcher: Sendable {
    public let bus: CommandBus
    public let info: VarlinkServiceInterface.Info
    private let interfaces = Mutex<[String: VarlinkInterface]>([:])
    /// Bumped whenever an interface is added or removed (see `route(_:)`).
    private let interfacesGeneration = Atomic<UInt64>(0)
    /// Served methods resolved so far, by full name: at most one per declared method (a name
    /// nothing serves is never kept, so clients cannot grow it).
    private let routes = Mutex<[String: VarlinkRoute]>([:])
    private let logger: Logger

    public init(bus: CommandBus, info: VarlinkServiceInterface.Info, logger: Logger = Logger(label: "appd.varlink")) throws {
        self.bus = bus
        self.info = info
        self.logger = logger
        try register(try VarlinkInterface(parsing: VarlinkServiceInterface.idl))
        try registerServiceMethods()
    }

    /// Serves an interface; its IDL must pass the portable-subset lint.
    public func register(_ interface: VarlinkInterface) throws(DuplicateInterface) {
        let added = interfaces.withLock { table -> Bool in
            guard table[interface.name] == nil else { return false }
            table[interface.name] = interface
            return true
        }
        guard added else { throw DuplicateInterface(name: interface.name) }
        interfacesGeneration.add(1, ordering: .releasing)
    }

    /// Stops serving an interface (an external plugin went away).
    public func unregister(interface name: String) {
        _ = interfaces.withLock { $0.removeValue(forKey: name) }
        interfacesGeneration.add(1, ordering: .releasing)
    }

    public var interfaceNames: [String] { interfaces.withLock { $0.keys.sorted() } }

    public func interface(_ name: String) -> VarlinkInterface? { interfaces.withLock { $0[name] } }

    /// Whether a served interface declares this method (only such names become metric labels).
    public func serves(_ method: String) -> Bool { route(method) != nil }

    /// The served method of this name, resolved (one lookup); nil when no served interface
    /// declares it. Kept until an interface or a handler is added or removed.
    public func route(_ method: String) -> VarlinkRoute? {
        // The generations are read before the tables: a change made meanwhile leaves the route
        // with an older generation, so the next call resolves it again.
        let generation = currentGeneration
        if let known = routes.withLock({ $0[method] }), known.generation == generation { return known }
        guard let (interfacePart, memberPart) = method.methodNameParts, let interface = interface(String(interfacePart)),
            let declared = interface.method(String(memberPart))
        else { return nil }
        let route = VarlinkRoute(name: method, interface: interface, method: declared, handler: bus.handler(method), generation: generation)
        routes.withLock { $0[method] = route }
        return route
    }

    /// Whether `route` still describes what is served (no interface or handler was added or
    /// removed since it was resolved).
    public func isCurrent(_ route: VarlinkRoute) -> Bool {
        route.generation == currentGeneration
    }

    private var currentGeneration: VarlinkRoute.Generation {
        VarlinkRoute.Generation(interfaces: interfacesGeneration.load(ordering: .acquiring), handlers: bus.handlersGeneration.load(ordering: .acquiring))
    }

    /// Whether a served interface declares this error. Only such names become metric labels:
    /// an external plugin's error reply is passed on as the plugin named it, and a name no
    /// interface declares is counted as `undeclared` (bounded series).
    public func declares(error name: String) -> Bool {
        guard let (interface, member) = name.methodNameParts else { return false }
        return self.interface(String(interface))?.error(String(member)) != nil
    }

    /// The category the serving interface declares for an error (its doc's `category:` line);
    /// nil when no served interface declares the error, or it declares no category.
    public func category(ofError name: String) -> ErrorCategory? {
        guard let (interface, member) = name.methodNameParts else { return nil }
        return self.interface(String(interface))?.error(String(member))?.category
    }

    /// Handles one call; `emit` writes a reply. Oneway calls emit nothing, not even errors.
    /// `route`: the call's method resolved already (`route(_:)`), when the transport has it.
    /// `transport` labels the call in the metrics (`varlink`, `http`). A transport that can
    /// take a stream's intermediate replies on the producer's thread passes `streamBytes` (see
    /// `ReplyStream.deliverDirectly`): it gets the reply's parameters and their JSON bytes, and
    /// false means "not now": the reply then comes through `emit`. A transport that writes
    /// replies as they are passes `encodedReplies`: a typed handler's reply then comes with its
    /// parameters encoded already (`VarlinkReply.encodedParameters`, one JSON pass). A
    /// transport that can take a stream's intermediate replies from any task passes
    /// `streamReplies`: the stream's handler then runs in the caller's task and writes them
    /// through it (`emit` still gets the final reply or the error).
    ///
    /// A stream is answered by `handleStream`, whose async frames are what an open stream holds
    /// while it waits: kept apart from this function's, which a plain call needs.
    public func handle(
        _ call: VarlinkCall, route resolved: VarlinkRoute? = nil, as caller: Caller, timeout: Duration? = nil, transport: String = "varlink",
        streamBytes: (@Sendable (JSONValue, [UInt8]) -> Bool)? = nil, streamReplies: (@Sendable (VarlinkReply) async throws -> Void)? = nil,
        encodedReplies: Bool = false, emit: (VarlinkReply) async throws -> Void
    ) async throws {
        let route = resolved ?? self.route(call.method)
        if call.more, let route, route.info?.streaming == true {
            return try await handleStream(
                call, route, as: caller, timeout: timeout, transport: transport, streamBytes: streamBytes, streamReplies: streamReplies, emit: emit)
        }
        try await handlePlain(call, route, as: caller, timeout: timeout, transport: transport, encodedReplies: encodedReplies, emit: emit)
    }

    /// Every call but a stream: see `handle`.
    @inline(never)
    private func handlePlain(
        _ call: VarlinkCall, _ route: VarlinkRoute?, as caller: Caller, timeout: Duration?, transport: String, encodedReplies: Bool,
        emit: (VarlinkReply) async throws -> Void
    ) async throws {
        // A failure to write a reply is the connection's (its client left, or stopped reading):
        // pass it up as is, never as an error of the call.
        let emitting: (VarlinkReply) async throws -> Void = { reply in
            do { try await emit(reply) } catch { throw EmitFailed(underlying: error) }
        }
        let started = ContinuousClock.now
        var outcome = "ok"
        defer {
            if let route {
                route.record(outcome: outcome, transport: transport, since: started)
            } else {
                CallMetrics.record(method: call.method, outcome: outcome, transport: transport, since: started, known: false)
            }
        }
        do {
            guard let route else { throw notServed(call.method) }
            try await answer(call, route, caller: caller, timeout: timeout, encodedReplies: encodedReplies, emit: emitting)
        } catch {
            try await settle(error, of: call, caller: caller, outcome: &outcome, emit: emit)
        }
    }

    /// A call that threw: its outcome counted under, its error answered through `emit` (not for
    /// a oneway call); a reply that could not be written (`EmitFailed`, the connection's
    /// failure, never the call's) and a cancellation are passed on as they are.
    func settle(_ error: any Error, of call: VarlinkCall, caller: Caller, outcome: inout String, emit: (VarlinkReply) async throws -> Void) async throws {
        if let failure = error as? EmitFailed {
            outcome = "disconnected"
            throw failure.underlying
        }
        if error is CancellationError {
            outcome = "cancelled"
            throw CancellationError()
        }
        let reply: VarlinkReply
        (outcome, reply) = failure(error, of: call, caller: caller)
        if !call.oneway { try await emit(reply) }
    }

    /// Answers a plain call at once, on the caller's thread (a transport's loop, where it read
    /// the call), when the bus can (`CommandBus.answerNow`: a handler that need not wait, gates
    /// that decide from memory): `emit` gets its reply (none for a oneway call; a success's parameters encoded
    /// already, `VarlinkReply.encodedParameters`), and the call is checked and counted
    /// as `handle` does. False when the call is not one of those: nothing was done, and `handle`
    /// answers it.
    public func answerNow(
        _ call: VarlinkCall, route resolved: VarlinkRoute? = nil, as caller: Caller, transport: String = "varlink", emit: (VarlinkReply) -> Void
    ) -> Bool {
        guard !call.more, call.idempotencyKey == nil, let route = resolved ?? route(call.method), let handler = route.handler, handler.answersInline else {
            return false
        }
        let started = ContinuousClock.now
        var reply: VarlinkReply
        var outcome = "ok"
        do {
            let answer = try bus.answerNow(handler, parameters: call.parameters, as: caller) {
                try route.interface.validateInput(of: route.method, call.parameters, qualifiedName: call.method)
            }
            guard let answer else { return false }
            if Self.checksTypedReplies { try check(try JSONParser.parse(answer), of: route.method, in: route.interface) }
            reply = VarlinkReply(encodedParameters: answer)
        } catch {
            (outcome, reply) = failure(error, of: call, caller: caller)
        }
        route.record(outcome: outcome, transport: transport, since: started)
        if !call.oneway { emit(reply) }
        return true
    }

    /// The outcome a failed call is counted under, and its error reply: a typed error as
    /// itself, anything else logged and answered as InternalError.
    func failure(_ error: any Error, of call: VarlinkCall, caller: Caller) -> (outcome: String, reply: VarlinkReply) {
        if let error = error as? any WireError {
            let (name, parameters) = error.wire
            return (declares(error: error.wireName) ? error.wireName : "undeclared", VarlinkReply(parameters: .object(parameters), error: name))
        }
        let id = MessageID.next().description
        logger.error(
            "call failed with an unexpected error",
            metadata: ["method": call.method, "error": "\(error)", "message.id": id, "caller": "\(caller)"])
        return ("InternalError", VarlinkReply(error: InternalError(messageID: id)))
    }

    /// Why no route serves `method`: its interface is not served, or does not declare it.
    private func notServed(_ method: String) -> any Error {
        guard let (interfacePart, _) = method.methodNameParts, !interfacePart.isEmpty else { return InterfaceNotFound(interface: method) }
        guard interface(String(interfacePart)) != nil else { return InterfaceNotFound(interface: String(interfacePart)) }
        return MethodNotFound(method: method)
    }

    /// Answers a call of a served method.
    private func answer(
        _ call: VarlinkCall, _ route: VarlinkRoute, caller: Caller, timeout: Duration?, encodedReplies: Bool,
        emit: (VarlinkReply) async throws -> Void
    ) async throws {
        let (interface, method, info) = (route.interface, route.method, route.info)
        try interface.validateInput(of: method, call.parameters, qualifiedName: call.method)
        let key = try call.idempotencyKey.map { text throws(InvalidIdempotencyKey) in try IdempotencyKey(text) }

        let checks = Self.checksReplies(of: route)
        // A `more` call of a streaming method went to `handleStream`; any other `more` call is
        // answered with one reply.
        if encodedReplies, key == nil, info?.typed == true {
            // A typed reply, encoded once to the bytes the transport writes (a keyed call keeps
            // the value path: its gate stores the reply).
            let bytes = try await bus.callEncoded(method: call.method, handler: route.handler, parameters: call.parameters, as: caller, timeout: timeout)
            guard !call.oneway else { return }
            if checks { try check(try JSONParser.parse(bytes), of: method, in: interface) }
            try await emit(VarlinkReply(encodedParameters: bytes))
            return
        }
        let reply = try await bus.call(
            method: call.method, handler: route.handler, parameters: call.parameters, as: caller, timeout: timeout, idempotencyKey: key)
        guard !call.oneway else { return }
        if checks { try check(reply, of: method, in: interface) }
        try await emit(VarlinkReply(parameters: reply))
    }

    /// Marks an error thrown while writing a reply.
    struct EmitFailed: Error {
        let underlying: any Error
    }

    /// Whether replies from typed handlers are checked against the IDL too: in debug builds
    /// (every test), so a drift the contract tests cannot see still fails there.
    static let checksTypedReplies: Bool = {
        #if DEBUG
        true
        #else
        false
        #endif
    }()

    /// Whether `route`'s replies are checked against its IDL: replies of Swift types are not
    /// checked again in release builds (the contract tests hold those types to the IDL); JSON
    /// from elsewhere (external plugins) always is.
    static func checksReplies(of route: VarlinkRoute) -> Bool {
        checksTypedReplies || route.info?.typed != true
    }

    /// A reply that breaks the interface's contract is a bug in appd: log it, answer InternalError.
    func check(_ reply: JSONValue, of method: VarlinkMethod, in interface: VarlinkInterface) throws {
        guard let problem = interface.check(reply, against: .structure(method.output), path: "") else { return }
        let id = MessageID.next().description
        logger.error(
            "reply does not match the interface",
            metadata: ["method": "\(interface.name).\(method.name)", "field": problem.path, "reason": problem.reason, "message.id": id])
        throw InternalError(messageID: id)
    }

    private func registerServiceMethods() throws {
        let info = self.info
        try bus.registerRaw(method: "org.varlink.service.GetInfo", requirements: [.socket]) { [weak self] _, _ in
            let names = self?.interfaceNames ?? []
            return [
                "vendor": .string(info.vendor), "product": .string(info.product), "version": .string(info.version),
                "url": .string(info.url), "interfaces": .array(names.map(JSONValue.string)),
            ]
        }
        try bus.registerRaw(method: "org.varlink.service.GetInterfaceDescription", requirements: [.socket]) { [weak self] _, parameters in
            let name = parameters["interface"]?.stringValue ?? ""
            guard let interface = self?.interface(name) else { throw InterfaceNotFound(interface: name) }
            return ["description": .string(interface.text)]
        }
    }
}

/// Two interfaces of the same name were registered.
public struct DuplicateInterface: Error, Equatable, CustomStringConvertible {
    public let name: String
    public var description: String { "interface \(name) is already served" }
}
