// SPDX-License-Identifier: Apache-2.0
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

    /// Publishes an event (admin): live only, or logged with `durable`.
    public struct Publish: Command {
        public static let method = "io.appd.Bus.Publish"
        public static let requirements: [Requirement] = [.admin, .socket]
        public struct Reply: Codable, Sendable {
            /// Its place on the log when durable.
            public var seq: Int64?
            public init(seq: Int64? = nil) { self.seq = seq }
        }
        public var topic: String
        public var payload: JSONValue
        public var durable: Bool?
        public init(topic: String, payload: JSONValue, durable: Bool? = nil) {
            self.topic = topic
            self.payload = payload
            self.durable = durable
        }
    }

    /// The event topics the daemon knows (plugins' event types, external ones included).
    public struct Topics: Command {
        public static let method = "io.appd.Bus.Topics"
        public struct Reply: Codable, Sendable {
            public var topics: [BusTopic]
            public init(topics: [BusTopic]) { self.topics = topics }
        }
        public init() {}
    }
}

/// One topic: its payload type (varlink IDL), who may receive it, whether it is logged, its publisher.
public struct BusTopic: Codable, Sendable, Equatable {
    public var topic: String
    public var version: Int
    public var payload: String
    public var audience: String
    public var durable: Bool
    public var publisher: String
    public var external: Bool
    public init(topic: String, version: Int, payload: String, audience: String, durable: Bool, publisher: String, external: Bool) {
        self.topic = topic
        self.version = version
        self.payload = payload
        self.audience = audience
        self.durable = durable
        self.publisher = publisher
        self.external = external
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
