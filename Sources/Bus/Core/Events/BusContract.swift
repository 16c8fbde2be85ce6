/// What a client of `io.appd.Bus` calls: the subscription to events, typed. (The server
/// serves the same method with events it encodes once for every subscriber; `BusTests` checks
/// these types against the served IDL.)
public enum BusContract {
    /// Events of the given topics or patterns; the signed-in user's own over HTTP.
    public struct Subscribe: StreamingCommand {
        public static let method = "io.appd.Bus.Subscribe"
        public typealias Reply = SubscribedEvent
        /// Topics or patterns (`todos.>`).
        public var topics: [String]
        /// Replay the durable log after this sequence number first, then continue live.
        public var since: Int64?
        public init(topics: [String], since: Int64? = nil) {
            self.topics = topics
            self.since = since
        }
    }
}

/// One event of a subscription.
public struct SubscribedEvent: Codable, Sendable, Equatable {
    /// Its place on the durable log (nil for a live-only event): resume after it with `since`.
    public var seq: Int64?
    public var topic: String
    /// RFC 3339.
    public var time: String
    public var payload: JSONValue
    /// Live events this subscriber missed before this one (it was too slow).
    public var dropped: Int
    public var id: String
    public var correlationId: String
    public var causationId: String?
    public var version: Int
    /// The account it was about was deleted: the payload is gone.
    public var redacted: Bool?

    public init(
        seq: Int64?, topic: String, time: String, payload: JSONValue, dropped: Int, id: String, correlationId: String, causationId: String? = nil,
        version: Int, redacted: Bool? = nil
    ) {
        self.seq = seq
        self.topic = topic
        self.time = time
        self.payload = payload
        self.dropped = dropped
        self.id = id
        self.correlationId = correlationId
        self.causationId = causationId
        self.version = version
        self.redacted = redacted
    }

    /// The payload as the event type of its topic; nil for another topic or a redacted event.
    public func decode<E: Event>(as type: E.Type = E.self) -> E? {
        guard topic == E.topic, redacted != true else { return nil }
        return try? payload.decode(as: E.self)
    }
}
