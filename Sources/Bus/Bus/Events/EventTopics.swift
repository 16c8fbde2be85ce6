// SPDX-License-Identifier: Apache-2.0
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

/// A topic is already owned by another publisher's event types.
public struct TopicConflict: Error, CustomStringConvertible, Equatable {
    public let topic: String
    public let owner: String
    public var description: String { "topic \(topic) already belongs to plugin '\(owner)'; pick another topic" }
}

/// Every topic a plugin's event types own: what `Topics` lists, what `Subscribe` asks about an
/// event's audience, and what admin `Publish` may not forge.
///
/// Ownership is keyed by the publisher's identity — its name *and* whether it is built in — so
/// an external plugin that calls itself "auth" owns nothing of the built-in auth plugin's. A
/// built-in plugin's topics, and every topic under the first label of one (`auth.…`), stay its
/// own for the daemon's life: nothing unregisters them.
public final class EventTopics: Sendable {
    private struct Table {
        var topics: [String: TopicInfo] = [:]
        /// First labels of built-in topics (`auth`, `todos`, …) → the built-in publisher.
        var reserved: [String: String] = [:]
    }
    private let table = Mutex<Table>(Table())

    public init() {}

    /// Registers a topic for its publisher; the same publisher (same name, same kind) may
    /// register it again.
    public func register(_ info: TopicInfo) throws(TopicConflict) {
        try register([info])
    }

    /// Registers topics all or nothing: when one is refused, none is registered (so a refused
    /// plugin leaves nothing behind that anyone would have to unregister).
    public func register(_ infos: [TopicInfo]) throws(TopicConflict) {
        try table.withLock { (t: inout Table) throws(TopicConflict) in
            for info in infos {
                if let existing = t.topics[info.topic], existing.publisher != info.publisher || existing.external != info.external {
                    throw TopicConflict(topic: info.topic, owner: existing.publisher)
                }
                if info.external, let owner = t.reserved[Self.firstLabel(info.topic)] {
                    throw TopicConflict(topic: info.topic, owner: owner)
                }
            }
            for info in infos {
                t.topics[info.topic] = info
                if !info.external { t.reserved[Self.firstLabel(info.topic)] = info.publisher }
            }
        }
    }

    /// Registers Swift event types for the built-in plugin `publisher`.
    public func register(_ types: [any Event.Type], publisher: String) throws {
        try register(try types.map { try TopicInfo($0, publisher: publisher) })
    }

    /// Forgets every topic the *external* plugin `publisher` registered (a plugin that was
    /// removed, changed or refused); a built-in plugin's topics are never touched.
    public func unregister(external publisher: String) {
        table.withLock { t in t.topics = t.topics.filter { !($0.value.external && $0.value.publisher == publisher) } }
    }

    public func info(_ topic: String) -> TopicInfo? { table.withLock { $0.topics[topic] } }

    /// Who alone may publish `topic`: the plugin whose event type owns it, or the built-in
    /// plugin whose topics share its first label; nil when anyone allowed may.
    public func owner(of topic: String) -> (publisher: String, external: Bool)? {
        table.withLock { t in
            if let info = t.topics[topic] { return (info.publisher, info.external) }
            return t.reserved[Self.firstLabel(topic)].map { ($0, false) }
        }
    }

    /// Who may see events of `topic`: its declared audience, admins only for unknown topics.
    public func audience(of topic: String) -> EventAudience { info(topic)?.audience ?? .admin }

    /// Every registered topic, sorted.
    public var all: [TopicInfo] { table.withLock { Array($0.topics.values) }.sorted { $0.topic < $1.topic } }

    private static func firstLabel(_ topic: String) -> String {
        topic.utf8.firstIndex(of: UInt8(ascii: ".")).map { String(topic[..<$0]) } ?? topic
    }
}
