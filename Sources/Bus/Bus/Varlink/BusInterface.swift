/// `io.appd.Bus`: events over the wire, and the bus's own errors.
public enum BusInterface {
    public static let idl = """
        # The event bus: subscribe to the events plugins publish.
        interface io.appd.Bus

        # Streams events whose topic matches one of the topics or patterns
        # ('todos.completed', 'todos.*', 'todos.>', '>' for everything). Call with 'more'.
        # Each reply is one event; 'dropped' counts events this subscriber missed just
        # before it because it read too slowly. With 'since', durable events it would have
        # missed are fetched from the log instead: only live-only events can be dropped.
        method Subscribe(
          # Topics or patterns to receive.
          topics: []string,
          # Replay the durable event log after this sequence number first (0: from the
          # beginning), then continue live with no gap and no repeat.
          since: ?int
        ) -> (
          seq: ?int,
          topic: string,
          time: string,
          payload: object,
          dropped: int
        )

        # Publishes an event. Admin only, for scripts and tests. With 'durable' the event is
        # first committed to the event log and the reply carries its sequence number.
        method Publish(topic: string, payload: object, durable: ?bool) -> (seq: ?int)

        # An external plugin's connection presents the credential appd gave it (APPD_PLUGIN_TOKEN);
        # the connection is then limited to what the plugin's manifest declares.
        method AuthenticatePlugin(token: string) -> (plugin: string)

        # The call did not finish before its deadline; retry or raise the timeout.
        error DeadlineExceeded (method: string)

        # No enabled plugin can check a requirement of this method (fail closed).
        error RequirementUnavailable (method: string, requirement: string)

        # The subscriber fell more than 'capacity' events behind and was disconnected.
        error SubscriptionOverflow (capacity: int)

        # A topic or pattern is malformed.
        error InvalidTopic (topic: string, reason: string)

        # The database could not do what was asked ('kind': busy, full, constraint, ...).
        error StorageFailed (kind: string)

        # An unexpected failure inside appd; its log has the details under 'messageId'.
        error InternalError (messageId: string)

        """

    struct Subscribe: StreamingCommand {
        static let method = "io.appd.Bus.Subscribe"
        typealias Reply = WireEvent
        var topics: [String]
        var since: Int64?
    }

    struct Publish: Command {
        static let method = "io.appd.Bus.Publish"
        static let requirements: [Requirement] = [.admin]
        typealias Reply = PublishReply
        var topic: String
        var payload: JSONValue
        var durable: Bool?
    }

    struct AuthenticatePlugin: Command {
        static let method = "io.appd.Bus.AuthenticatePlugin"
        struct Reply: Codable, Sendable { var plugin: String }
        var token: String
    }

    struct PublishReply: Codable, Sendable {
        var seq: Int64?
    }

    struct WireEvent: Codable, Sendable {
        var seq: Int64?
        var topic: String
        var time: String
        var payload: JSONValue
        var dropped: Int
    }

    /// Serves `io.appd.Bus` on `dispatcher`; live subscriptions use `options`; `replay` (the
    /// durable event log) serves `Subscribe(since:)` and durable `Publish`.
    public static func install(
        on dispatcher: VarlinkDispatcher, options: SubscriptionOptions = .default, replay: (any EventReplay)? = nil,
        credentials: (any PluginCredentials)? = nil
    ) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(AuthenticatePlugin.self) { command, envelope in
            guard let connection = envelope.caller.connection, let scope = credentials?.scope(forToken: command.token) else {
                throw PermissionDenied(reason: "not a valid plugin credential")
            }
            connection.pluginScope = scope
            return .init(plugin: scope.plugin)
        }
        try bus.register(Publish.self) { command, envelope in
            if let scope = envelope.caller.connection?.pluginScope, !scope.mayPublish(command.topic) {
                throw PermissionDenied(reason: "plugin '\(scope.plugin)' may not publish \(command.topic); declare it under \"publishes\"")
            }
            guard command.durable == true else {
                try bus.publish(topic: command.topic, payload: command.payload, causedBy: envelope)
                return PublishReply(seq: nil)
            }
            guard let replay else {
                throw InvalidParameters(method: Publish.method, parameter: "durable", reason: "this daemon keeps no durable event log")
            }
            return PublishReply(seq: try await replay.append(topic: command.topic, payload: command.payload, causedBy: envelope))
        }
        try bus.register(Subscribe.self) { command, envelope, writer in
            if let scope = envelope.caller.connection?.pluginScope, let denied = command.topics.first(where: { !scope.maySubscribe($0) }) {
                throw PermissionDenied(reason: "plugin '\(scope.plugin)' may not subscribe to \(denied); declare it under \"subscribes\"")
            }
            let filter = try TopicFilter(anyOf: command.topics)
            func send(_ event: BusEvent) async throws {
                let payload: JSONValue
                do { payload = try event.json() } catch { payload = .object([:]) }
                try await writer.send(
                    WireEvent(
                        seq: event.sequence, topic: event.topic, time: event.timestamp.rfc3339,
                        payload: payload, dropped: event.droppedBefore))
            }
            // Live first, then the log: anything committed meanwhile arrives live, and what
            // both deliver is skipped by its sequence number, so there is no gap and no repeat.
            let subscription = bus.subscribe(filter, options: options)
            defer { subscription.cancel() }
            var replayed: Int64 = 0
            if let since = command.since {
                guard let replay else {
                    throw InvalidParameters(
                        method: Subscribe.method, parameter: "since", reason: "this daemon keeps no durable event log")
                }
                guard since >= 0 else {
                    throw InvalidParameters(method: Subscribe.method, parameter: "since", reason: "must be 0 or more")
                }
                replayed = since
                while true {
                    let page = try await replay.events(after: replayed, limit: 512)
                    for event in page {
                        replayed = event.sequence ?? replayed
                        if filter.matches(event.topic) { try await send(event) }
                    }
                    if page.count < 512 { break }
                }
            }
            for try await event in subscription {
                if let sequence = event.sequence, sequence <= replayed { continue }
                // A subscriber that asked for the log and fell behind its live buffer: what was
                // dropped and is durable comes back from the log, in order; only live-only
                // events stay reported as dropped.
                if event.droppedBefore > 0, command.since != nil, let replay, let sequence = event.sequence {
                    var recovered = 0
                    while replayed < sequence - 1 {
                        let page = try await replay.events(after: replayed, limit: 512).filter { ($0.sequence ?? 0) < sequence }
                        for missed in page {
                            replayed = missed.sequence ?? replayed
                            if filter.matches(missed.topic) {
                                try await send(missed)
                                recovered += 1
                            }
                        }
                        if page.isEmpty { break }
                    }
                    var live = event
                    live.droppedBefore = max(0, event.droppedBefore - recovered)
                    try await send(live)
                    replayed = sequence
                    continue
                }
                try await send(event)
                if let sequence = event.sequence { replayed = sequence }
            }
            throw CancellationError()
        }
    }
}
