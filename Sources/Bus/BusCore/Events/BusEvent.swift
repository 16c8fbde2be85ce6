// SPDX-License-Identifier: Apache-2.0
/// An event's payload: the typed value as published, or JSON from the wire or the event log.
public enum EventPayload: Sendable {
    case typed(any Event)
    case json(JSONValue)
}

/// One event as a subscriber receives it: metadata plus payload.
public struct BusEvent: Sendable, Cause {
    public let id: MessageID
    public let correlationID: MessageID
    public let causationID: MessageID?
    public let topic: String
    /// The payload's shape version (`Event.version` of its publisher).
    public let version: Int
    /// The user it is about, for `owner`-audience events.
    public let owner: String?
    public let timestamp: WallTime
    /// Position in the durable event log; nil for live-only events.
    public private(set) var sequence: Int64?
    public let payload: EventPayload
    /// Its owner's account was deleted: the payload is gone, topic, sequence and time remain.
    public let redacted: Bool
    /// How many events this subscriber missed just before this one (`dropOldest` overflow).
    public package(set) var droppedBefore: Int = 0
    /// Of those, the live-only ones (no sequence), which no log can give back.
    public package(set) var droppedUnlogged: Int = 0
    /// The payload's JSON text when it was made already (the event log's encoding, kept so the
    /// bus and its subscribers do not encode the same event again).
    private var encodedPayload: [UInt8]?

    /// A new event, caused by `cause` (a command's envelope or another event).
    public init(
        topic: String, payload: EventPayload, version: Int = 1, owner: String? = nil, sequence: Int64? = nil,
        causedBy cause: (any Cause)? = nil, timestamp: WallTime = .now()
    ) {
        let id = MessageID.next()
        self.id = id
        self.correlationID = cause?.correlationID ?? id
        self.causationID = cause?.id
        self.topic = topic
        self.version = version
        self.owner = owner
        self.timestamp = timestamp
        self.sequence = sequence
        self.payload = payload
        self.redacted = false
    }

    /// A new typed event.
    public init<E: Event>(_ event: E, causedBy cause: (any Cause)?, timestamp: WallTime = .now()) {
        self.init(topic: E.topic, payload: .typed(event), version: E.version, owner: event.owner, causedBy: cause, timestamp: timestamp)
    }

    /// An event as the log stored it.
    public init(
        stored id: MessageID, correlationID: MessageID, causationID: MessageID?, topic: String, version: Int, owner: String?,
        sequence: Int64, timestamp: WallTime, payload: JSONValue, redacted: Bool
    ) {
        self.id = id
        self.correlationID = correlationID
        self.causationID = causationID
        self.topic = topic
        self.version = version
        self.owner = owner
        self.sequence = sequence
        self.timestamp = timestamp
        self.payload = .json(payload)
        self.redacted = redacted
    }

    /// The same event at its place in the log; `payload`: the JSON text the log holds for it.
    public func logged(at sequence: Int64, payload text: [UInt8]? = nil) -> BusEvent {
        var copy = self
        copy.sequence = sequence
        if let text { copy.encodedPayload = text }
        return copy
    }

    /// The event as the log keeps it once its owner's account is erased: topic, time and
    /// position, no payload.
    public func tombstone(at sequence: Int64) -> BusEvent {
        BusEvent(
            stored: id, correlationID: correlationID, causationID: causationID, topic: topic, version: version, owner: owner,
            sequence: sequence, timestamp: timestamp, payload: .object([:]), redacted: true)
    }

    /// The payload as `E` (brought forward from an older version), or nil when the topic
    /// differs, the event was redacted, or the payload does not decode.
    public func decode<E: Event>(as type: E.Type = E.self) -> E? {
        guard topic == E.topic, !redacted else { return nil }
        switch payload {
        case .typed(let event): return event as? E
        case .json(let json):
            guard let current = version < E.version ? try? E.upgrade(json, from: version) : json else { return nil }
            return try? current.decode(as: E.self)
        }
    }

    /// The payload as JSON, for the wire and the event log. An event the log encoded already
    /// gives back what the log holds (as a replayed one does).
    public func json() throws -> JSONValue {
        switch payload {
        case .json(let json): return json
        case .typed(let event):
            if let encodedPayload { return try JSONParser.parse(encodedPayload) }
            return try JSONValue(encoding: event)
        }
    }

    /// The payload's compact JSON text (sorted keys), encoded once: the event log's row and the
    /// wire's bytes are this.
    public func jsonBytes() throws -> [UInt8] {
        if let encodedPayload { return encodedPayload }
        switch payload {
        case .typed(let event): return try JSONBytesEncoder.encode(event)
        case .json(let json): return JSONWriter.bytes(json)
        }
    }
}
