// SPDX-License-Identifier: Apache-2.0
/// `io.appd.Bus`: events over the wire, and the bus's own errors.
public enum BusInterface {
    public static let idl = """
        # The event bus: subscribe to the events plugins publish.
        interface io.appd.Bus

        # One topic: the event type that owns it, as its publisher declared it.
        type Topic (
          topic: string,
          # The payload's shape version.
          version: int,
          # The payload type in varlink IDL syntax.
          payload: string,
          # Who receives it: owner (the user it is about, and admins), admin, or
          # capability:NAME (only plugins holding that capability).
          audience: string,
          # Whether it is written to the event log (replayable with 'since').
          durable: bool,
          # The plugin that publishes it.
          publisher: string,
          # Whether that plugin is an external one.
          external: bool
        )

        # Streams events whose topic matches one of the topics or patterns
        # ('todos.completed', 'todos.*', 'todos.>', '>' for everything). Call with 'more'.
        # Each reply is one event; 'dropped' counts events this subscriber missed just
        # before it because it read too slowly. With 'since', durable events it would have
        # missed are fetched from the log instead: only live-only events can be dropped.
        # Who asks decides what arrives, live and replayed: a signed-in user (Authenticate)
        # receives the events about them, an admin peer every event but capability-only ones,
        # a plugin what its manifest declares; anyone else gets PermissionDenied.
        # A signed-in user's stream lives as long as the session that opened it: it ends
        # with that session's error (SessionExpired, Unauthenticated, AccountDisabled) when
        # the session is revoked or expires or the account is disabled or deleted, and with
        # StreamLifetimeEnded after the longest lifetime; subscribe again with 'since'.
        # An account holds a bounded number of streams (TooManyStreams), each with a
        # bounded number of topics (InvalidParameter).
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
          dropped: int,
          # The event's id, the id of the conversation it belongs to (the first command's),
          # and the message that caused it.
          id: string,
          correlationId: string,
          causationId: ?string,
          # The payload's shape version.
          version: int,
          # The account it was about was deleted: the payload is gone.
          redacted: ?bool
        )

        # Every topic plugins' event types own, with payload type, audience and publisher.
        method Topics() -> (topics: []Topic)

        # Publishes an event. Admin only, for scripts and tests. With 'durable' the event is
        # first committed to the event log and the reply carries its sequence number. Topics
        # owned by a plugin's event types are refused (TopicOwned): nobody forges them.
        method Publish(topic: string, payload: object, durable: ?bool) -> (seq: ?int)

        # An external plugin's connection presents the credential appd gave it (APPD_PLUGIN_TOKEN);
        # the connection is then limited to what the plugin's manifest declares.
        method AuthenticatePlugin(token: string) -> (plugin: string)

        # The call did not finish before its deadline; retry or raise the timeout.
        # category: timedOut
        error DeadlineExceeded (method: string)

        # No enabled plugin can check a requirement of this method (fail closed).
        # category: unavailable
        error RequirementUnavailable (method: string, requirement: string)

        # Idempotency keys (HTTP Idempotency-Key, or 'idempotencyKey' next to 'method' in a
        # varlink call): a write sent again with the same key has its effect once and gets
        # the first outcome again. The key is unusable (empty, over 255 characters, not
        # visible ASCII).
        # category: invalid
        error InvalidIdempotencyKey (reason: string)
        # The method does not take a key (it changes nothing, or does not declare it).
        # category: invalid
        error IdempotencyNotSupported (method: string)
        # The key was used for this method with other parameters: a new write needs a new key.
        # category: unprocessable
        error IdempotencyKeyReused (method: string)
        # The first call with this key is still running; retry after the seconds given.
        # category: conflict
        error IdempotencyKeyInUse (method: string, retryAfterSeconds: int)
        # The first call with this key took effect but its reply was lost in a crash; read
        # the current state instead of retrying.
        # category: conflict
        error IdempotencyOutcomeUnknown (method: string)

        # The subscriber fell more than 'capacity' events behind and was disconnected.
        # category: unavailable
        error SubscriptionOverflow (capacity: int)

        # A topic or pattern is malformed.
        # category: invalid
        error InvalidTopic (topic: string, reason: string)

        # The payload does not fit the type the topic's publisher declared.
        # category: invalid
        error InvalidEventPayload (topic: string, reason: string)

        # The topic belongs to a plugin's event type; only that plugin publishes it.
        # category: forbidden
        error TopicOwned (topic: string, publisher: string)

        # The plugin's manifest does not declare the topic under "publishes": add it there
        # (a pattern like notes.> covers a family) and restart the plugin.
        # category: forbidden
        error TopicNotDeclared (topic: string, plugin: string)

        # The account already holds 'limit' event streams; close one, or ask for several
        # topics in one stream.
        # category: tooManyRequests
        error TooManyStreams (limit: int, retryAfterSeconds: int)

        # The stream was open for its longest lifetime; subscribe again with 'since'.
        # category: invalid
        error StreamLifetimeEnded (seconds: int)

        # The account makes calls faster than it may (accountCallsPerMinute); retry after
        # 'retryAfterSeconds'.
        # category: tooManyRequests
        error RateLimited (retryAfterSeconds: int)

        # The account keeps as many bytes of text as it may (the operator's accountStorageMB,
        # its todos, chats and memories together); delete some of 'part' first.
        # category: forbidden
        error QuotaExceeded (quota: string, part: string, limitBytes: int)

        # The database could not do what was asked ('kind': busy, full, constraint, ...).
        # category: unavailable
        error StorageFailed (kind: string)

        # A worker pool ('pool': e.g. password hashing) has no room for the call; retry shortly.
        # category: unavailable
        error Busy (pool: string)

        # An unexpected failure inside appd; its log has the details under 'messageId'.
        # category: internal
        error InternalError (messageId: string)

        """

    struct Subscribe: StreamingCommand {
        static let method = "io.appd.Bus.Subscribe"
        /// An event in the IDL's `Event` shape, encoded once per event for every subscriber
        /// (`SubscriptionFeed`).
        typealias Reply = JSONValue
        var topics: [String]
        var since: Int64?
    }

    /// Checks the caller's session through the gates (the session gate resolves it, or refuses
    /// it with its error). In no interface: only a signed-in user's stream calls it, in-process,
    /// to learn whether its session still holds.
    struct CheckSession: Command {
        static let method = "io.appd.Bus.CheckSession"
        static let requirements: [Requirement] = [.session]
        typealias Reply = Empty
    }

    typealias Topics = BusContract.Topics
    typealias WireTopic = BusTopic

    typealias Publish = BusContract.Publish

    struct AuthenticatePlugin: Command {
        static let method = "io.appd.Bus.AuthenticatePlugin"
        static let requirements: [Requirement] = [.socket]
        struct Reply: Codable, Sendable { var plugin: String }
        var token: String
    }

    typealias PublishReply = BusContract.Publish.Reply

    /// Serves `io.appd.Bus` on `dispatcher`, with the events of `events` (appd's bus, the one the
    /// dispatcher's commands go to); live subscriptions use `options`; `replay` (the
    /// durable event log) serves `Subscribe(since:)` and durable `Publish`; `isAdmin` says
    /// which callers are peer-credential admins (they see every event but capability-only ones).
    public static func install(
        on dispatcher: VarlinkDispatcher, events bus: EventBus, options: SubscriptionOptions = .default, limits: SubscribeLimits = SubscribeLimits(),
        replay: (any EventReplay)? = nil, credentials: (any PluginCredentials)? = nil, isAdmin: @escaping @Sendable (Caller) -> Bool
    ) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        // The methods go to the bus the dispatcher routes to; `bus` is for events.
        let commands = dispatcher.bus
        let encoded = EncodedEvents()
        try commands.register(AuthenticatePlugin.self) { command, envelope in
            guard let connection = envelope.caller.connection, let scope = credentials?.scope(forToken: command.token) else {
                throw PermissionDenied(reason: "not a valid plugin credential")
            }
            if let bound = connection.boundPlugin, bound != scope.plugin {
                throw PermissionDenied(reason: "this connection belongs to plugin '\(bound)'")
            }
            connection.pluginScope = scope
            return .init(plugin: scope.plugin)
        }
        try commands.register(Topics.self) { _, _ in
            .init(
                topics: bus.topics.all.map {
                    WireTopic(
                        topic: $0.topic, version: $0.version, payload: $0.schema.description, audience: $0.audience.description,
                        durable: $0.durable, publisher: $0.publisher, external: $0.external)
                })
        }
        try commands.register(Publish.self) { command, envelope in
            let scope = envelope.caller.connection?.pluginScope
            if let scope, !scope.mayPublish(command.topic) {
                throw TopicNotDeclared(topic: command.topic, plugin: scope.plugin)
            }
            // A plugin's event types are published by that plugin alone: an admin script that
            // could publish a durable auth.accountDeleted would erase a live user's data.
            // Built-in topics (and every topic under a built-in's first label) are published
            // in-process only; an external plugin's by that plugin's own connection.
            if let owner = bus.topics.owner(of: command.topic), !owner.external || owner.publisher != scope?.plugin {
                throw TopicOwned(topic: command.topic, publisher: owner.publisher)
            }
            let event = try bus.event(topic: command.topic, payload: command.payload, causedBy: envelope)
            guard command.durable == true else {
                bus.publish(event)
                return PublishReply(seq: nil)
            }
            guard let replay else {
                throw InvalidParameters(method: Publish.method, parameter: "durable", reason: "this daemon keeps no durable event log")
            }
            return PublishReply(seq: try await replay.append(event))
        }
        try commands.register(CheckSession.self) { _, _ in Empty() }
        try commands.register(Subscribe.self) { command, envelope, writer in
            // Every open subscription holds this closure's async frame: the checks and the
            // session-bound case are functions of their own, so it stays small.
            let (filter, visibility) = try checked(command, envelope, limits: limits, hasLog: replay != nil, isAdmin: isAdmin)
            // Live first, then the log: anything committed meanwhile arrives live, and what
            // both deliver is skipped by its sequence number, so there is no gap and no repeat.
            let subscription = bus.subscribe(filter, options: options, visibility: visibility)
            defer { subscription.cancel() }
            // A signed-in user's stream ends when its session fails a check (`serveBound`).
            var bound = false
            if case .user = visibility, envelope.caller.sessionToken != nil { bound = true }
            let feed = SubscriptionFeed(
                filter: filter, visibility: visibility, topics: bus.topics, writer: writer, replay: command.since == nil ? nil : replay,
                encoded: encoded, stop: bound ? StopSignal() : nil)
            if case .user(let userID) = visibility, let token = envelope.caller.sessionToken, let stop = feed.stop {
                try await serveBound(feed, subscription, stop: stop, since: command.since, userID: userID, token: token, caller: envelope.caller, bus: bus, limits: limits)
            } else {
                try await feed.run(subscription, since: command.since)
            }
            throw CancellationError()
        }
    }

    /// A subscription's filter and who it is for, or why it is refused.
    private static func checked(
        _ command: Subscribe, _ envelope: Envelope, limits: SubscribeLimits, hasLog: Bool, isAdmin: (Caller) -> Bool
    ) throws -> (TopicFilter, EventVisibility) {
        guard command.topics.count <= limits.maxTopics else {
            throw InvalidParameters(
                method: Subscribe.method, parameter: "topics", reason: "at most \(limits.maxTopics) topics or patterns ('todos.>' covers a whole plugin)")
        }
        let visibility = try Self.visibility(of: envelope, isAdmin: isAdmin)
        if case .plugin(let scope) = visibility, let denied = command.topics.first(where: { !scope.maySubscribe($0) }) {
            throw PermissionDenied(reason: "plugin '\(scope.plugin)' may not subscribe to \(denied); declare it under \"subscribes\"")
        }
        let filter = try TopicFilter(anyOf: command.topics)
        if let since = command.since {
            guard hasLog else {
                throw InvalidParameters(method: Subscribe.method, parameter: "since", reason: "this daemon keeps no durable event log")
            }
            guard since >= 0 else {
                throw InvalidParameters(method: Subscribe.method, parameter: "since", reason: "must be 0 or more")
            }
        }
        return (filter, visibility)
    }

    /// A signed-in user's stream, held to the session that opened it.
    @inline(never)
    private static func serveBound(
        _ feed: SubscriptionFeed, _ subscription: Subscription, stop: StopSignal, since: Int64?, userID: String, token: SessionToken, caller: Caller,
        bus: EventBus, limits: SubscribeLimits
    ) async throws {
        var checker = caller
        checker.connection = nil  // this session, whatever the connection authenticates later
        checker.principal = nil
        checker.sessionToken = token
        // A failed check stops the feed: nothing more is delivered, and a feed waiting for
        // events is woken (its subscription closed).
        stop.onStop { subscription.cancel() }
        try await SessionBoundStream(bus: bus, caller: checker, userID: userID, limits: limits).run(stop: stop) {
            try await feed.run(subscription, since: since)
        }
    }

    /// Who is subscribing decides what they receive: a plugin's connection its
    /// manifest, an admin peer every event but capability-only ones, a signed-in user their
    /// own events; anyone else is refused.
    static func visibility(of envelope: Envelope, isAdmin: (Caller) -> Bool) throws -> EventVisibility {
        if let scope = envelope.caller.connection?.pluginScope { return .plugin(scope) }
        if isAdmin(envelope.caller) { return .admin }
        if let principal = envelope.caller.principal { return .user(principal.userID) }
        throw PermissionDenied(
            reason: "Subscribe needs a signed-in session (io.appd.Auth.Authenticate on this connection) or an admin peer (the daemon's uid, root, or the admin group)")
    }
}
