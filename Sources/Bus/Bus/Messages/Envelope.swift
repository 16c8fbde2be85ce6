/// Everything about a message except its payload: ids, time, deadline, caller, and a logger.
///
/// Gates receive the envelope and may pass a changed copy inward (the session gate fills in
/// `caller.principal`); the handler sees what the innermost gate passed.
public struct Envelope: Sendable {
    public let id: MessageID
    /// The id of the first message of the conversation this one belongs to.
    public let correlationID: MessageID
    /// The message that directly caused this one, if any.
    public let causationID: MessageID?
    public let timestamp: WallTime
    /// When the caller stops waiting; nil means no deadline.
    public let deadline: ContinuousClock.Instant?
    public var caller: Caller
    /// The method name for commands, the topic for events.
    public let name: String
    public let requirements: [Requirement]
    private let baseLogger: Logger

    public init(
        name: String, requirements: [Requirement], caller: Caller, deadline: ContinuousClock.Instant? = nil,
        causedBy cause: Envelope? = nil, logger: Logger
    ) {
        let id = MessageID.next()
        self.id = id
        self.correlationID = cause?.correlationID ?? id
        self.causationID = cause?.id
        self.timestamp = .now()
        self.deadline = deadline
        self.caller = caller
        self.name = name
        self.requirements = requirements
        self.baseLogger = logger
    }

    /// A logger whose metadata names this message, so every line can be traced to its call.
    /// Built on demand: most messages never log.
    public var logger: Logger {
        var logger = baseLogger
        logger[metadataKey: "message.id"] = id.description
        logger[metadataKey: "message.name"] = name
        if correlationID != id { logger[metadataKey: "message.correlation"] = correlationID.description }
        return logger
    }

    /// Whether the deadline (if any) has passed.
    public var isExpired: Bool {
        deadline.map { ContinuousClock.now >= $0 } ?? false
    }
}
