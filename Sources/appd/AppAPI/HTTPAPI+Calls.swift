// SPDX-License-Identifier: Apache-2.0
import Bus
import HTTP

/// `POST /v1/<interface>/<Method>`: a call, answered with its reply, or streamed as events.
extension HTTPAPI {
    /// `client` is the caller's address (`ClientAddress`), for the rate limit and the caller.
    func call(_ request: HTTPServerRequest, _ body: [UInt8], client: String) -> HTTPHandling {
        guard let routed = routed(path: request.path) else {
            return .now(APIErrorStatus.refusal(404, "org.varlink.service.MethodNotFound", ["method": .string(Self.methodName(request.path))]))
        }
        let method = routed.route.name
        guard request.method == "POST" else {
            return .now(HTTPResponse(status: 405, body: ["error": "MethodNotAllowed", "parameters": ["allow": "POST"]], headers: [("Allow", "POST")]))
        }
        if let type = request.headers["content-type"], !body.isEmpty,
            !type.hasPrefixIgnoringASCIICase("application/json")
        {
            return .now(APIErrorStatus.refusal(415, "UnsupportedMediaType", ["reason": "send the parameters as application/json"]))
        }
        var parameters: JSONValue = [:]
        if !body.isEmpty {
            do {
                parameters = try JSONParser.parse(body)
            } catch {
                return .now(APIErrorStatus.refusal(400, "org.varlink.service.InvalidParameter", ["parameter": "", "reason": .string("the body is not JSON: \(error)")]))
            }
            guard case .object = parameters else {
                return .now(APIErrorStatus.refusal(400, "org.varlink.service.InvalidParameter", ["parameter": "", "reason": "the body must be a JSON object"]))
            }
        }
        var token: SessionToken?
        if let authorization = request.headers["authorization"] {
            let scheme = authorization.prefix(7)
            let value = authorization.dropFirst(7).trimmingWhitespace()
            guard scheme.lowercased() == "bearer ", !value.isEmpty else {
                return .now(refusal(refusals.notBearer, otherwise: .unauthenticated))
            }
            token = SessionToken(value)
        }
        if routed.rateLimited, let wait = limiter.take(NetworkAddress.client(client)) {
            return .now(refusal(refusals.clientRateLimited(wait), otherwise: .tooManyRequests))
        }
        let caller = Caller(sessionToken: token, remoteAddress: client)
        let wantsEvents = request.headers["accept"]?.containsIgnoringASCIICase("text/event-stream") == true
        guard routed.info.streaming, wantsEvents || !routed.info.answersPlainCalls else {
            let conditional: Bool
            switch ConditionalRequest.apply(request.headers["if-match"], to: &parameters, method: routed.route.method) {
            case .refused(let response): return .now(response)
            case .applied(let given): conditional = given
            }
            let reply = ReplyShape(conditional: conditional, taggable: routed.taggable)
            return single(routed.route, parameters, caller, idempotencyKey: request.headers["idempotency-key"], shape: reply)
        }
        return stream(request, method, parameters, caller, wantsEvents: wantsEvents, client: client)
    }

    /// `/v1/<interface>/<Method>` → `<interface>.<Method>`; "" for a path with another number of
    /// parts after `/v1/`.
    static func methodName(_ path: String) -> String {
        let utf8 = path.utf8
        let rest = utf8.dropFirst("/v1/".utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")), !rest[utf8.index(after: slash)...].contains(UInt8(ascii: "/")) else { return "" }
        var method = String(Substring(rest[..<slash]))
        method.append(".")
        method.append(contentsOf: Substring(rest[utf8.index(after: slash)...]))
        return method
    }

    /// A streaming method's call, as server-sent events: refused at once when it cannot be one,
    /// else answered by `eventStream` in the request's task.
    private func stream(_ request: HTTPServerRequest, _ method: String, _ parameters: JSONValue, _ caller: Caller, wantsEvents: Bool, client: String) -> HTTPHandling {
        var parameters = parameters
        guard wantsEvents else {
            return .now(APIErrorStatus.refusal(406, "NotAcceptable", ["reason": "this method streams its replies: call it with Accept: text/event-stream"]))
        }
        if request.headers["idempotency-key"] != nil {
            let refusal = IdempotencyNotSupported(method: method)
            let (name, parameters) = refusal.wire
            return .now(APIErrorStatus.response(error: name, parameters: .object(parameters), in: dispatcher))
        }
        if method == "io.appd.Bus.Subscribe", let last = request.headers["last-event-id"] {
            guard let sequence = Int64(last), sequence >= 0 else {
                return .now(APIErrorStatus.refusal(400, "org.varlink.service.InvalidParameter", ["parameter": "Last-Event-ID", "reason": "must be an event's sequence number"]))
            }
            var fields = parameters.objectValue ?? [:]
            fields["since"] = .int(sequence)
            parameters = .object(fields)
        }
        if let refused = clientStreams.take(client) {
            let refusal = TooManyStreams(limit: refused.limit)
            let (name, parameters) = refusal.wire
            return .now(APIErrorStatus.response(error: name, parameters: .object(parameters), in: dispatcher))
        }
        // The slot is held until the request's work ends (the server always runs it).
        return .responding { [self, parameters] responder in
            await Self.eventStream(
                method, parameters, caller, dispatcher: dispatcher, firstReplyGrace: options.firstReplyGrace, keepAlive: options.keepAliveInterval,
                into: responder)
            clientStreams.release(client)
        }
    }

    /// `idempotencyKey`: the `Idempotency-Key` header; `shape`: whether the call carried `If-Match`
    /// (a Conflict is then 412 Precondition Failed). Answered at once when the dispatcher can
    /// (`VarlinkDispatcher.answerNow`), else in the server's task.
    private func single(_ route: VarlinkRoute, _ parameters: JSONValue, _ caller: Caller, idempotencyKey: String?, shape: ReplyShape) -> HTTPHandling {
        let method = route.name
        let call = VarlinkCall(method: method, parameters: parameters, idempotencyKey: idempotencyKey)
        var now: VarlinkReply?
        if dispatcher.answerNow(call, route: route, as: caller, transport: "http", emit: { now = $0 }) {
            return .now(Self.response(to: now, shape, in: dispatcher))
        }
        let limit = options.callTimeout
        // The call runs in the server's task for the request, and its deadline is kept here
        // (`KeptDeadline`), not raced by a task of its own: at the deadline the client is answered
        // DeadlineExceeded and the work cancelled (a write it had not claimed is rolled back).
        return .responding { [self] responder in
            let kept = KeptDeadline(method: method, deadline: .now.advanced(by: limit))
            let alarm = Alarm(at: kept.deadline) {
                guard kept.expire() else { return }
                responder.respond(Self.timedOut(method))
                responder.cancelWork()
            }
            defer { alarm.cancel() }
            var result: VarlinkReply?
            do {
                try await kept.keep {
                    try await dispatcher.handle(call, route: route, as: caller, timeout: limit, transport: "http", encodedReplies: true) { result = $0 }
                }
            } catch {
                // Only a cancelled call gets here (the server is stopping, or the deadline passed).
                responder.respond(Self.timedOut(method))
                return
            }
            responder.respond(Self.response(to: result, shape, in: dispatcher))
        }
    }

    static func timedOut(_ method: String) -> HTTPResponse {
        APIErrorStatus.response(error: "io.appd.Bus.DeadlineExceeded", parameters: ["method": .string(method)], category: .timedOut)
    }

    /// What the response to a plain call depends on besides its reply: whether the call was
    /// conditional (a Conflict is then 412), and whether its reply may carry an entity tag.
    struct ReplyShape {
        let conditional: Bool
        let taggable: Bool
    }

    /// The response to a plain call's reply.
    private static func response(to result: VarlinkReply?, _ shape: ReplyShape, in dispatcher: VarlinkDispatcher) -> HTTPResponse {
        let conditional = shape.conditional
        guard let reply = result else { return APIErrorStatus.response(error: "io.appd.Bus.InternalError", parameters: ["messageId": ""], category: .internal) }
        if let error = reply.error {
            var response = APIErrorStatus.response(error: error, parameters: reply.parameters, in: dispatcher)
            if conditional, error.hasSuffix(".Conflict") { response.status = 412 }
            return response
        }
        guard let encoded = reply.encodedParameters else {
            var response = HTTPResponse(status: 200, body: reply.parameters)
            if let tag = ConditionalRequest.entityTag(of: reply.parameters) { response.headers.append(("ETag", tag)) }
            return response
        }
        var response = HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: encoded)
        // Only a reply that may hold a versioned item is read back, for its entity tag.
        if shape.taggable, let value = try? reply.parametersValue(), let tag = ConditionalRequest.entityTag(of: value) {
            response.headers.append(("ETag", tag))
        }
        return response
    }

    /// Runs the call in the caller's task (the request's) and answers through `responder`: an
    /// error as its first reply (a gate's refusal, bad parameters) is a plain error response
    /// whose status says what went wrong; the first other reply, or `firstReplyGrace` passing
    /// with none, starts an event stream that carries every reply (a later error as an `error`
    /// event). The client leaving cancels the request's task, and with it the call.
    /// (The operator console streams events to the browser with it too.)
    ///
    /// One task per stream, the request's; no hand-off: the call's handler writes each event
    /// (a subscription's events go from the publisher straight to the socket while the stream
    /// is caught up: `streamBytes`). The grace and the keep-alive are alarms on the server's loop.
    public static func eventStream(
        _ method: String, _ parameters: JSONValue, _ caller: Caller, dispatcher: VarlinkDispatcher, firstReplyGrace wait: Duration, keepAlive interval: Duration,
        into responder: HTTPResponder
    ) async {
        let head = HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")])
        let grace = Alarm(after: wait) { responder.startStream(head) }
        // Proxies and the client see the stream is alive; a client a buffer behind needs none.
        let keepAlive = RepeatingAlarm(every: interval) { _ = responder.writeIfBelowHighWater(keepAliveComment) }
        defer {
            grace.cancel()
            keepAlive.cancel()
        }
        let send: @Sendable (VarlinkReply) async throws -> Void = { reply in
            if let error = reply.error, responder.respond(APIErrorStatus.response(error: error, parameters: reply.parameters, in: dispatcher)) { return }
            guard responder.startStream(head) else { throw HTTPStreamClosed() }
            try await responder.write(event(reply))
        }
        try? await dispatcher.handle(
            VarlinkCall(method: method, parameters: parameters, more: true), as: caller, transport: "http",
            streamBytes: { parameters, bytes in
                let id = eventID(parameters)
                return responder.writeIfBelowHighWater(count: eventByteCount(id: id, encoded: bytes)) { writeEvent(id: id, encoded: bytes, into: &$0) }
            },
            streamReplies: send
        ) { reply in
            try await send(reply)
        }
        if !responder.hasStarted {
            // Only a cancelled call ends without a reply (the server is stopping, or the client left).
            responder.respond(timedOut(method))
        }
    }

    static let keepAliveComment: [UInt8] = Array(": keep-alive\n\n".utf8)

    /// One reply as a server-sent event: `event: reply` (or `error`), the reply as JSON on one
    /// `data:` line, and an `id:` with the event's sequence number when it has one (a
    /// reconnecting client sends it back as Last-Event-ID).
    static func event(_ reply: VarlinkReply) -> [UInt8] {
        if let error = reply.error {
            return Array("event: error\ndata: ".utf8) + JSONWriter.bytes(["error": .string(error), "parameters": reply.parameters]) + Array("\n\n".utf8)
        }
        return event(parameters: reply.parameters, encoded: JSONWriter.bytes(reply.parameters))
    }

    /// A reply's event from its parameters and their JSON bytes.
    static func event(parameters: JSONValue, encoded: [UInt8]) -> [UInt8] {
        let id = eventID(parameters)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(eventByteCount(id: id, encoded: encoded))
        writeEvent(id: id, encoded: encoded, into: &bytes)
        return bytes
    }

    /// The event's `id:`, the reply's sequence number when it has one.
    static func eventID(_ parameters: JSONValue) -> String? {
        if case .int(let sequence)? = parameters["seq"] { return String(sequence) }
        return nil
    }

    /// How many bytes `writeEvent` appends.
    static func eventByteCount(id: String?, encoded: [UInt8]) -> Int {
        (id.map { 5 + $0.utf8.count } ?? 0) + eventHead.count + encoded.count + 2
    }

    /// Appends the event (encoded once for every subscriber of a fan-out, framed into each
    /// subscriber's buffer): `id: …` when it has one, `event: reply`, the JSON on one `data:` line.
    static func writeEvent(id: String?, encoded: [UInt8], into out: inout [UInt8]) {
        if let id {
            out += "id: ".utf8
            out += id.utf8
            out.append(UInt8(ascii: "\n"))
        }
        out += eventHead
        out += encoded
        out.append(UInt8(ascii: "\n"))
        out.append(UInt8(ascii: "\n"))
    }

    static let eventHead: [UInt8] = Array("event: reply\ndata: ".utf8)

    /// A refusal the API makes itself, with the status its interface declares for it, or the
    /// category of the refusal when no served interface declares the error.
    func refusal(_ error: any WireError, otherwise category: ErrorCategory) -> HTTPResponse {
        let (name, parameters) = error.wire
        return APIErrorStatus.response(error: name, parameters: .object(parameters), category: dispatcher.category(ofError: name) ?? category)
    }
}
