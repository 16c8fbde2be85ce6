/// `io.appd.Bus`: events over the wire, and the bus's own errors.
public enum BusInterface {
    public static let idl = """
        # The event bus: subscribe to the events plugins publish.
        interface io.appd.Bus

        # Streams events whose topic matches one of the topics or patterns
        # ('todos.completed', 'todos.*', 'todos.>', '>' for everything). Call with 'more'.
        # Each reply is one event; 'dropped' counts events this subscriber missed just
        # before it because it read too slowly.
        method Subscribe(
          # Topics or patterns to receive.
          topics: []string,
          # Replay from this position of the durable event log first (needs the event log).
          since: ?int
        ) -> (
          seq: ?int,
          topic: string,
          time: string,
          payload: object,
          dropped: int
        )

        # Publishes an event (live subscribers only). Admin only, for scripts and tests.
        method Publish(topic: string, payload: object) -> ()

        # The call did not finish before its deadline; retry or raise the timeout.
        error DeadlineExceeded (method: string)

        # No enabled plugin can check a requirement of this method (fail closed).
        error RequirementUnavailable (method: string, requirement: string)

        # The subscriber fell more than 'capacity' events behind and was disconnected.
        error SubscriptionOverflow (capacity: int)

        # A topic or pattern is malformed.
        error InvalidTopic (topic: string, reason: string)

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
        typealias Reply = Empty
        var topic: String
        var payload: JSONValue
    }

    struct WireEvent: Codable, Sendable {
        var seq: Int64?
        var topic: String
        var time: String
        var payload: JSONValue
        var dropped: Int
    }

    /// Serves `io.appd.Bus` on `dispatcher`; live subscriptions use `options`.
    public static func install(on dispatcher: VarlinkDispatcher, options: SubscriptionOptions = .default) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Publish.self) { command, envelope in
            try bus.publish(topic: command.topic, payload: command.payload, causedBy: envelope)
            return Empty()
        }
        try bus.register(Subscribe.self) { command, _, writer in
            if command.since != nil {
                throw InvalidParameters(
                    method: Subscribe.method, parameter: "since",
                    reason: "replay needs the durable event log, which this build does not have yet")
            }
            let subscription = bus.subscribe(try TopicFilter(anyOf: command.topics), options: options)
            defer { subscription.cancel() }
            for try await event in subscription {
                let payload: JSONValue
                do { payload = try event.json() } catch { payload = .object([:]) }
                try await writer.send(
                    WireEvent(
                        seq: event.sequence, topic: event.topic, time: event.timestamp.rfc3339,
                        payload: payload, dropped: event.droppedBefore))
            }
            throw CancellationError()
        }
    }
}
