// SPDX-License-Identifier: Apache-2.0
/// No handler is registered for the method. Fails at once; distinct from `DeadlineExceeded`.
public struct NoHandler: WireError, Equatable {
    public let method: String
    public init(method: String) { self.method = method }
    public var wireName: String { "org.varlink.service.MethodNotImplemented" }
    public var wireParameters: [String: JSONValue] { ["method": .string(method)] }
    public var description: String { "no handler for \(method): is the plugin that serves it enabled and running?" }
}

/// A second handler tried to register a method that already has one.
public struct DuplicateHandler: Error, Equatable, CustomStringConvertible {
    public let method: String
    public init(method: String) { self.method = method }
    public var description: String { "\(method) already has a handler; each method has exactly one" }
}

/// The caller's deadline passed before a reply was ready; the handler was cancelled.
public struct DeadlineExceeded: WireError, Equatable {
    public let method: String
    public init(method: String) { self.method = method }
    public static let name = "io.appd.Bus.DeadlineExceeded"
    public var wireName: String { Self.name }
    public var wireParameters: [String: JSONValue] { ["method": .string(method)] }
    public var description: String { "\(method) did not reply before the deadline; retry later or raise the timeout" }
}

/// No installed gate can check one of the command's requirements (for example the plugin
/// that contributes that gate is disabled), so the command is denied rather than let through.
public struct RequirementUnavailable: WireError, Equatable {
    public let method: String
    public let requirement: Requirement
    public init(method: String, requirement: Requirement) {
        self.method = method
        self.requirement = requirement
    }
    public var wireName: String { "io.appd.Bus.RequirementUnavailable" }
    public var wireParameters: [String: JSONValue] {
        ["method": .string(method), "requirement": .string(requirement.description)]
    }
    public var description: String {
        "\(method) needs '\(requirement)' but no enabled plugin checks it; enable the plugin that provides it"
    }
}

/// The parameters of a type-erased call could not be decoded into the command's type.
public struct InvalidParameters: WireError {
    public let method: String
    /// The offending field's name when it is known, otherwise empty.
    public let parameter: String
    public let reason: String
    public init(method: String, parameter: String, reason: String) {
        self.method = method
        self.parameter = parameter
        self.reason = reason
    }
    public var wireName: String { "org.varlink.service.InvalidParameter" }
    public var wireParameters: [String: JSONValue] { ["parameter": .string(parameter)] }
    public var description: String { "invalid parameter '\(parameter)' for \(method): \(reason)" }
}

/// A streaming method was called as a single call, or the other way round.
public struct WrongCallShape: WireError {
    public let method: String
    public let streaming: Bool
    public init(method: String, streaming: Bool) {
        self.method = method
        self.streaming = streaming
    }
    public var wireName: String { streaming ? "org.varlink.service.ExpectedMore" : "org.varlink.service.InvalidParameter" }
    public var wireParameters: [String: JSONValue] { streaming ? [:] : ["parameter": "more"] }
    public var description: String {
        streaming ? "\(method) streams its replies: call it with 'more'" : "\(method) returns one reply: call it without 'more'"
    }
}

/// A subscription with the `disconnect` policy fell behind by more than its buffer.
public struct SubscriptionOverflow: WireError, Equatable {
    public let capacity: Int
    public init(capacity: Int) { self.capacity = capacity }
    public var wireName: String { "io.appd.Bus.SubscriptionOverflow" }
    public var wireParameters: [String: JSONValue] { ["capacity": .int(Int64(capacity))] }
    public var description: String {
        "subscriber fell more than \(capacity) events behind and was disconnected; resubscribe with 'since' to resume"
    }
}

/// A topic or topic pattern is not well formed.
public struct InvalidTopic: WireError, Equatable {
    public let topic: String
    public let reason: String
    public init(topic: String, reason: String) {
        self.topic = topic
        self.reason = reason
    }
    public var wireName: String { "io.appd.Bus.InvalidTopic" }
    public var wireParameters: [String: JSONValue] { ["topic": .string(topic), "reason": .string(reason)] }
    public var description: String { "invalid topic '\(topic)': \(reason)" }
}

/// `drain()` did not see every delivery finish in time.
public struct DrainTimeout: Error, Equatable, CustomStringConvertible {
    public let pending: Int
    public init(pending: Int) { self.pending = pending }
    public var description: String { "drain timed out with \(pending) subscription(s) still behind" }
}

/// A published payload does not fit its topic's declared type.
public struct InvalidEventPayload: WireError, Equatable {
    public let topic: String
    public let reason: String
    public init(topic: String, reason: String) {
        self.topic = topic
        self.reason = reason
    }
    public var wireName: String { "io.appd.Bus.InvalidEventPayload" }
    public var wireParameters: [String: JSONValue] { ["topic": .string(topic), "reason": .string(reason)] }
    public var description: String { "the payload does not fit \(topic): \(reason)" }
}

/// The topic belongs to a plugin's event type; only that plugin publishes it.
public struct TopicOwned: WireError, Equatable {
    public let topic: String
    public let publisher: String
    public init(topic: String, publisher: String) {
        self.topic = topic
        self.publisher = publisher
    }
    public var wireName: String { "io.appd.Bus.TopicOwned" }
    public var wireParameters: [String: JSONValue] { ["topic": .string(topic), "publisher": .string(publisher)] }
    public var description: String {
        "\(topic) belongs to plugin '\(publisher)': its events are published only by it (pick a topic of your own, e.g. demo.\(topic))"
    }
}

/// A plugin published a topic its manifest does not declare under "publishes".
public struct TopicNotDeclared: WireError, Equatable {
    public let topic: String
    public let plugin: String
    public init(topic: String, plugin: String) {
        self.topic = topic
        self.plugin = plugin
    }
    public var wireName: String { "io.appd.Bus.TopicNotDeclared" }
    public var wireParameters: [String: JSONValue] { ["topic": .string(topic), "plugin": .string(plugin)] }
    public var description: String {
        "plugin '\(plugin)' may not publish \(topic); declare it under \"publishes\" in its plugin.json"
    }
}

/// The account already holds as many event streams as it may.
public struct TooManyStreams: WireError, Equatable {
    public let limit: Int
    public init(limit: Int) { self.limit = limit }
    public var wireName: String { "io.appd.Bus.TooManyStreams" }
    public var wireParameters: [String: JSONValue] { ["limit": .int(Int64(limit)), "retryAfterSeconds": .int(5)] }
    public var description: String { "this account already holds \(limit) event streams; close one (or subscribe to several topics in one stream)" }
}

/// A signed-in user's stream reached its maximum lifetime.
public struct StreamLifetimeEnded: WireError, Equatable {
    public let seconds: Int
    public init(seconds: Int) { self.seconds = seconds }
    public var wireName: String { "io.appd.Bus.StreamLifetimeEnded" }
    public var wireParameters: [String: JSONValue] { ["seconds": .int(Int64(seconds))] }
    public var description: String { "the stream was open for its longest lifetime (\(seconds) s); subscribe again with 'since' to continue where it ended" }
}

/// The account made more calls than its limit allows; retry after the given seconds.
public struct RateLimited: WireError, Equatable {
    public let retryAfterSeconds: Int
    public init(retryAfterSeconds: Int) { self.retryAfterSeconds = retryAfterSeconds }
    public var wireName: String { "io.appd.Bus.RateLimited" }
    public var wireParameters: [String: JSONValue] { ["retryAfterSeconds": .int(Int64(retryAfterSeconds))] }
    public var description: String { "this account is making calls faster than it may; retry in \(retryAfterSeconds) s" }
}

/// The account keeps as many bytes as it may (`accountStorageMB`): delete something first.
public struct StorageQuotaExceeded: WireError, Equatable {
    /// What was being stored ("todos", "chat", "memories").
    public let part: String
    public let limitBytes: Int64
    public init(part: String, limitBytes: Int64) {
        self.part = part
        self.limitBytes = limitBytes
    }
    public var wireName: String { "io.appd.Bus.QuotaExceeded" }
    public var wireParameters: [String: JSONValue] { ["quota": .string("storage"), "part": .string(part), "limitBytes": .int(limitBytes)] }
    public var description: String {
        "this account keeps \(limitBytes >> 20) MiB of text, as much as it may (its todos, chats and memories together); delete some \(part) first"
    }
}
