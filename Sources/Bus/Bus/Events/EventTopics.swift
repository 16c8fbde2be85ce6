import Synchronization

/// One topic as `io.appd.Bus.Topics` lists it: who publishes it, its payload type, who may see it.
public struct TopicInfo: Sendable {
    public let topic: String
    public let version: Int
    public let schema: EventSchema
    public let audience: EventAudience
    public let durable: Bool
    /// The plugin whose event type owns the topic.
    public let publisher: String
    /// Whether the publisher is an external plugin (its payloads are checked against `schema`).
    public let external: Bool

    public init(
        topic: String, version: Int, schema: EventSchema, audience: EventAudience, durable: Bool, publisher: String, external: Bool
    ) {
        self.topic = topic
        self.version = version
        self.schema = schema
        self.audience = audience
        self.durable = durable
        self.publisher = publisher
        self.external = external
    }

    /// The topic of a Swift event type.
    public init<E: Event>(_ type: E.Type, publisher: String) throws {
        try TopicFilter.validate(topic: E.topic)
        self.init(
            topic: E.topic, version: E.version, schema: try EventSchema(of: E.self), audience: E.audience, durable: E.durable,
            publisher: publisher, external: false)
    }
}

/// A topic is already owned by another publisher's event type.
public struct TopicConflict: Error, CustomStringConvertible, Equatable {
    public let topic: String
    public let owner: String
    public var description: String { "topic \(topic) already belongs to plugin '\(owner)'; pick another topic" }
}

/// Every topic a plugin's event types own: what `Topics` lists, what `Subscribe` asks about an
/// event's audience, and what admin `Publish` may not forge.
public final class EventTopics: Sendable {
    private let topics = Mutex<[String: TopicInfo]>([:])

    public init() {}

    /// Registers a topic for its publisher; the same publisher may register it again.
    public func register(_ info: TopicInfo) throws(TopicConflict) {
        try topics.withLock { (t: inout [String: TopicInfo]) throws(TopicConflict) in
            if let existing = t[info.topic], existing.publisher != info.publisher {
                throw TopicConflict(topic: info.topic, owner: existing.publisher)
            }
            t[info.topic] = info
        }
    }

    /// Registers Swift event types for `publisher`.
    public func register(_ types: [any Event.Type], publisher: String) throws {
        for type in types { try register(try TopicInfo(type, publisher: publisher)) }
    }

    /// Forgets every topic of `publisher` (an external plugin that was removed).
    public func unregister(publisher: String) {
        topics.withLock { t in t = t.filter { $0.value.publisher != publisher } }
    }

    public func info(_ topic: String) -> TopicInfo? { topics.withLock { $0[topic] } }

    /// Who may see events of `topic`: its declared audience, admins only for unknown topics.
    public func audience(of topic: String) -> EventAudience { info(topic)?.audience ?? .admin }

    /// Every registered topic, sorted.
    public var all: [TopicInfo] { topics.withLock { Array($0.values) }.sorted { $0.topic < $1.topic } }
}
