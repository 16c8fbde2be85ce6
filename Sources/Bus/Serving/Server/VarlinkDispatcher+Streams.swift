// SPDX-License-Identifier: Apache-2.0
import Runtime

extension VarlinkDispatcher {
    /// Answers a `more` call of a streaming method: every reply through `emit` (or
    /// `streamBytes`, `streamReplies`: see `handle`), counted and its errors answered as
    /// `handle` does.
    ///
    /// What an open stream costs is mostly the async frames its tasks hold, and a task keeps
    /// the memory of its deepest moment until it ends (the task allocator reuses, never
    /// frees, its slabs). So the deep part — checking the call, the gates (`open`) — runs in a
    /// task of its own that ends once the stream is open. Then, given `streamReplies`, the
    /// handler runs here, in the caller's task (a connection's worker, which has nothing else
    /// to do while its stream is open), each reply written as it is sent: one task per open
    /// stream, no producer task and no buffer in between. Without it the handler runs in a
    /// task of its own and the replies are relayed from it.
    @inline(never)
    func handleStream(
        _ call: VarlinkCall, _ route: VarlinkRoute, as caller: Caller, timeout: Duration?, transport: String,
        streamBytes: (@Sendable (JSONValue, [UInt8]) -> Bool)?, streamReplies: (@Sendable (VarlinkReply) async throws -> Void)?,
        emit: (VarlinkReply) async throws -> Void
    ) async throws {
        let started = ContinuousClock.now
        var outcome = "ok"
        defer { route.record(outcome: outcome, transport: transport, since: started) }
        let checks = Self.checksReplies(of: route)
        do {
            let stream = try await open(call, route, as: caller, timeout: timeout, streamBytes: streamBytes, deferred: streamReplies != nil)
            let last: JSONValue
            if let streamReplies {
                // On the shared pool, as a handler started in a task of its own would be: the
                // caller may be an I/O loop's worker, and the loop must stay free for I/O.
                last = try await withTaskExecutorPreference(globalConcurrentExecutor) {
                    try await stream.run { [self] value in
                        if checks { try check(value, of: route.method, in: route.interface) }
                        do { try await streamReplies(VarlinkReply(parameters: value, continues: true)) } catch { throw EmitFailed(underlying: error) }
                    }
                }
            } else {
                last = try await relay(stream, checks: checks, route, emit: emit)
            }
            if checks { try check(last, of: route.method, in: route.interface) }
            do { try await emit(VarlinkReply(parameters: last)) } catch { throw EmitFailed(underlying: error) }
        } catch {
            try await settle(error, of: call, caller: caller, outcome: &outcome, emit: emit)
        }
    }

    /// A started stream's intermediate replies through `emit` as they come; returns the final one.
    private func relay(
        _ stream: ReplyStream<JSONValue>, checks: Bool, _ route: VarlinkRoute, emit: (VarlinkReply) async throws -> Void
    ) async throws -> JSONValue {
        while let (value, isFinal) = try await stream.nextReply() {
            if isFinal { return value }
            if checks { try check(value, of: route.method, in: route.interface) }
            do { try await emit(VarlinkReply(parameters: value, continues: true)) } catch { throw EmitFailed(underlying: error) }
        }
        throw CancellationError()
    }

    /// Checks the call and starts its stream, in a task that ends once the stream is open (see
    /// `handleStream`); cancelling the caller cancels it.
    private func open(
        _ call: VarlinkCall, _ route: VarlinkRoute, as caller: Caller, timeout: Duration?,
        streamBytes: (@Sendable (JSONValue, [UInt8]) -> Bool)?, deferred: Bool
    ) async throws -> ReplyStream<JSONValue> {
        try await inTaskOfItsOwn { [self] in try await start(call, route, as: caller, timeout: timeout, streamBytes: streamBytes, deferred: deferred) }
    }

    private func start(
        _ call: VarlinkCall, _ route: VarlinkRoute, as caller: Caller, timeout: Duration?,
        streamBytes: (@Sendable (JSONValue, [UInt8]) -> Bool)?, deferred: Bool
    ) async throws -> ReplyStream<JSONValue> {
        let (interface, method) = (route.interface, route.method)
        try interface.validateInput(of: method, call.parameters, qualifiedName: call.method)
        if let key = call.idempotencyKey {
            _ = try IdempotencyKey(key)  // a malformed key is named as such first
            throw IdempotencyNotSupported(method: call.method)
        }
        let stream = try await bus.callStream(method: call.method, parameters: call.parameters, as: caller, timeout: timeout, deferred: deferred)
        if let streamBytes {
            if Self.checksReplies(of: route) {
                stream.deliverDirectly { value, bytes in
                    // A reply that breaks the contract takes the slow path, which answers it.
                    if interface.check(value, against: .structure(method.output), path: "") != nil { return false }
                    return streamBytes(value, bytes)
                }
            } else {
                // A typed handler's replies are its contract's type: nothing to check, and no
                // closure in between per reply.
                stream.deliverDirectly(to: streamBytes)
            }
        }
        return stream
    }
}
