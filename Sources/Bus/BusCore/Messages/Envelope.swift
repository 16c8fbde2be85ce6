// SPDX-License-Identifier: Apache-2.0
/// Everything about a message except its payload: ids, time, deadline, caller, and a logger.
///
/// Gates receive the envelope and may pass a changed copy inward (the session gate fills in
/// `caller.principal`); the handler sees what the innermost gate passed. The fixed part lives
/// in one shared object so passing the envelope through the gate chain copies little.
public struct Envelope: Sendable {
    private final class Header: Sendable {
        let id: MessageID
        let correlationID: MessageID
        let causationID: MessageID?
        let timestamp: WallTime
        let deadline: ContinuousClock.Instant?
        let name: String
        let requirements: [Requirement]
        let logger: SharedLogger
        let idempotency: IdempotentRequest?

        init(
            name: String, requirements: [Requirement], deadline: ContinuousClock.Instant?, cause: Envelope?, logger: SharedLogger,
            idempotency: IdempotentRequest?
        ) {
            let id = MessageID.next()
            self.id = id
            self.correlationID = cause?.correlationID ?? id
            self.causationID = cause?.id
            self.timestamp = .now()
            self.deadline = deadline
            self.name = name
            self.requirements = requirements
            self.logger = logger
            self.idempotency = idempotency
        }
    }

    private let header: Header
    public var caller: Caller
    /// Set by the idempotency gate for a keyed call: the handler runs with it as the task's
    /// `IdempotencyRecord.current`, so its writes keep the key in their transaction.
    public var idempotencyRecord: IdempotencyRecord?

    public init(
        name: String, requirements: [Requirement], caller: Caller, deadline: ContinuousClock.Instant? = nil,
        causedBy cause: Envelope? = nil, logger: Logger, idempotency: IdempotentRequest? = nil
    ) {
        self.init(
            name: name, requirements: requirements, caller: caller, deadline: deadline, causedBy: cause, logger: SharedLogger(logger),
            idempotency: idempotency)
    }

    /// An envelope whose logger is one kept by reference (a bus's, shared by every call it
    /// makes an envelope for: one reference to copy per call, not the logger's parts).
    package init(
        name: String, requirements: [Requirement], caller: Caller, deadline: ContinuousClock.Instant? = nil,
        causedBy cause: Envelope? = nil, logger: SharedLogger, idempotency: IdempotentRequest? = nil
    ) {
        self.header = Header(
            name: name, requirements: requirements, deadline: deadline, cause: cause, logger: logger, idempotency: idempotency)
        self.caller = caller
    }

    public var id: MessageID { header.id }
    /// The id of the first message of the conversation this one belongs to.
    public var correlationID: MessageID { header.correlationID }
    /// The message that directly caused this one, if any.
    public var causationID: MessageID? { header.causationID }
    public var timestamp: WallTime { header.timestamp }
    /// When the caller stops waiting; nil means no deadline.
    public var deadline: ContinuousClock.Instant? { header.deadline }
    /// The method name for commands, the topic for events.
    public var name: String { header.name }
    public var requirements: [Requirement] { header.requirements }
    /// The call's idempotency key and parameters, when the client sent a key.
    public var idempotency: IdempotentRequest? { header.idempotency }

    /// A logger whose metadata names this message, so every line can be traced to its call.
    /// Built on demand: most messages never log.
    public var logger: Logger {
        var logger = header.logger.logger
        logger[metadataKey: "message.id"] = id.description
        logger[metadataKey: "message.name"] = name
        if correlationID != id { logger[metadataKey: "message.correlation"] = correlationID.description }
        if let principal = caller.principal { logger[metadataKey: "user.id"] = principal.userID }
        if let peer = caller.peer { logger[metadataKey: "peer.uid"] = String(peer.uid) }
        return logger
    }

    /// Whether the deadline (if any) has passed.
    public var isExpired: Bool {
        deadline.map { ContinuousClock.now >= $0 } ?? false
    }
}
