/// An event's payload: the typed value as published, or JSON from the wire or the event log.
public enum EventPayload: Sendable {
    case typed(any Event)
    case json(JSONValue)
}

/// One event as a subscriber receives it: metadata plus payload.
public struct BusEvent: Sendable {
    public let id: MessageID
    public let correlationID: MessageID
    public let causationID: MessageID?
    public let topic: String
    public let timestamp: WallTime
    /// Position in the durable event log; nil for live-only events.
    public let sequence: Int64?
    public let payload: EventPayload
    /// How many events this subscriber missed just before this one (`dropOldest` overflow).
    public internal(set) var droppedBefore: Int = 0

    public init(
        topic: String, payload: EventPayload, sequence: Int64? = nil, causedBy cause: Envelope? = nil,
        timestamp: WallTime = .now()
    ) {
        let id = MessageID.next()
        self.id = id
        self.correlationID = cause?.correlationID ?? id
        self.causationID = cause?.id
        self.topic = topic
        self.timestamp = timestamp
        self.sequence = sequence
        self.payload = payload
    }

    /// The payload as `E`, or nil when the topic differs or the payload does not decode.
    public func decode<E: Event>(as type: E.Type = E.self) -> E? {
        guard topic == E.topic else { return nil }
        switch payload {
        case .typed(let event): return event as? E
        case .json(let json): return try? json.decode(as: E.self)
        }
    }

    /// The payload as JSON, for the wire and the event log.
    public func json() throws -> JSONValue {
        switch payload {
        case .typed(let event): try JSONValue(encoding: event)
        case .json(let json): json
        }
    }
}
