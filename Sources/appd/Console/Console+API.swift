// SPDX-License-Identifier: Apache-2.0
import AppAPI
import Bus
import HTTP

/// The console's routes once signed in: the page, its script and style, and the JSON the page
/// reads (calls through the dispatcher, events, metrics, the audit trail).
extension Console {
    /// The bus methods the page may call — exactly those its pages use: what appctl's admin does
    /// to plugins, accounts and entitlements, and the reads behind the pages. Nothing else.
    static let callable: Set<String> = [
        "io.appd.Daemon.Status", "io.appd.Daemon.RestartPlugin", "io.appd.Daemon.EnablePlugin", "io.appd.Daemon.DisablePlugin",
        "io.appd.Auth.ListUsers", "io.appd.Auth.GetUser", "io.appd.Auth.DisableUser", "io.appd.Auth.EnableUser", "io.appd.Auth.DeleteUser",
        "io.appd.Payments.UserStatus", "io.appd.Payments.Grant", "io.appd.Payments.Revoke", "io.appd.Console.Sessions",
    ]

    func api(_ request: HTTPServerRequest, _ body: [UInt8], session: ConsoleSessions.Session, cookie: String) async -> HTTPResponse {
        let caller = Caller(peer: session.credentials, console: session.id)
        switch (request.method, request.path) {
        case ("GET", "/console/"), ("HEAD", "/console/"):
            return asset(ConsoleAssets.page(csrf: session.csrf, session: session.id), type: "text/html; charset=utf-8")
        case ("GET", "/console/console.js"): return asset(ConsoleAssets.script, type: "text/javascript; charset=utf-8")
        case ("GET", "/console/console.css"): return asset(ConsoleAssets.style, type: "text/css; charset=utf-8")
        case ("GET", "/console/api/session"):
            return HTTPResponse(status: 200, body: ["id": .string(session.id), "uid": .int(Int64(session.credentials.uid))])
        case ("GET", "/console/api/metrics"): return HTTPResponse(status: 200, body: metricsHistory.current())
        case ("GET", "/console/api/audit"): return HTTPResponse(status: 200, body: auditLines())
        case ("GET", "/console/api/events"):
            // Answered through a responder (`handling`); a GET that gets here came some other way.
            return ConsoleHeaders.refusal(404, "not found")
        case ("POST", "/console/api/logout"):
            do {
                try await sessions.end(cookie: cookie)
            } catch {
                return ConsoleHeaders.refusal(503, "cannot end the session: \(error)")
            }
            logger.notice("console session ended", metadata: ["console.session": session.id])
            return HTTPResponse(status: 200, body: ["signedOut": true], headers: [("Set-Cookie", ConsoleHeaders.clearedCookie(options: options))])
        default: break
        }
        if request.path.hasPrefix("/console/api/call/") {
            guard request.method == "POST" else { return ConsoleHeaders.methodNotAllowed("POST") }
            return await call(String(request.path.dropFirst("/console/api/call/".count)), body, caller: caller)
        }
        return ConsoleHeaders.refusal(404, "not found")
    }

    private func asset(_ text: String, type: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", type)], body: Array(text.utf8))
    }

    /// One allowed method, called as the session's admin; the reply, or the error with the
    /// HTTP status the app API would give it.
    private func call(_ method: String, _ body: [UInt8], caller: Caller) async -> HTTPResponse {
        guard Self.callable.contains(method) else {
            return HTTPResponse(status: 404, body: ["error": "org.varlink.service.MethodNotFound", "parameters": ["method": .string(method)]])
        }
        var parameters: JSONValue = [:]
        if !body.isEmpty {
            guard let parsed = try? JSONParser.parse(body), case .object = parsed else {
                return HTTPResponse(
                    status: 400, body: ["error": "org.varlink.service.InvalidParameter", "parameters": ["parameter": "", "reason": "the body must be a JSON object"]])
            }
            parameters = parsed
        }
        var result: VarlinkReply?
        do {
            try await dispatcher.handle(VarlinkCall(method: method, parameters: parameters), as: caller, timeout: .seconds(30), transport: "console") { result = $0 }
        } catch {
            return APIErrorStatus.response(error: "io.appd.Bus.DeadlineExceeded", parameters: ["method": .string(method)], category: .timedOut)
        }
        guard let reply = result else { return APIErrorStatus.response(error: "io.appd.Bus.InternalError", parameters: ["messageId": ""], category: .internal) }
        if let error = reply.error { return APIErrorStatus.response(error: error, parameters: reply.parameters, in: dispatcher) }
        return HTTPResponse(status: 200, body: reply.parameters)
    }

    /// `io.appd.Bus.Subscribe` as the session's admin (every event but capability-only ones),
    /// as server-sent events; `topics` is a comma-separated list of topics or patterns.
    /// The stream ends when its session does (signed out, ended from appctl, expired).
    func events(_ request: HTTPServerRequest, caller: Caller, session id: String, into responder: HTTPResponder) async {
        let topics = (request.query["topics"] ?? ">").split(separator: ",").map { JSONValue.string(String($0).trimmingWhitespace()) }
        var parameters: [String: JSONValue] = ["topics": .array(topics.isEmpty ? [">"] : topics)]
        if let since = request.query["since"] {
            guard let sequence = Int64(since), sequence >= 0 else {
                responder.respond(ConsoleHeaders.refusal(400, "since must be an event's sequence number"))
                return
            }
            parameters["since"] = .int(sequence)
        }
        let client = request.peerAddress
        guard streams.take(client) == nil else {
            responder.respond(ConsoleHeaders.refusal(429, "\(options.maxStreams) console event streams are open; close a page"))
            return
        }
        defer { streams.release(client) }
        let sessions = self.sessions
        await withTaskGroup(of: Void.self) { [dispatcher, parameters] group in
            group.addTask {
                await HTTPAPI.eventStream(
                    "io.appd.Bus.Subscribe", .object(parameters), caller, dispatcher: dispatcher, firstReplyGrace: .milliseconds(200), keepAlive: .seconds(15),
                    into: responder)
            }
            group.addTask {
                // A session that cannot be checked (the database is away) ends the stream.
                while !Task.isCancelled, (try? await sessions.stillOpen(id: id)) == true { try? await Task.sleep(for: .seconds(1)) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// The audit trail, newest first: time, level, message and metadata of each line.
    private func auditLines() -> JSONValue {
        let entries = trail?.entries ?? []
        return [
            "capacity": .int(Int64(trail?.capacity ?? 0)),
            "lines": .array(
                entries.map { entry in
                    [
                        "time": .string(entry.time.rfc3339), "level": .string(entry.record.level.description), "message": .string(entry.record.message),
                        "metadata": .object(entry.record.metadata.mapValues(JSONValue.string)),
                    ]
                }),
        ]
    }
}
