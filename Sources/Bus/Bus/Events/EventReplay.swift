/// A source of past events by sequence number (the durable event log), for `Subscribe(since:)`.
public protocol EventReplay: Sendable {
    /// Events after `sequence`, oldest first, at most `limit`.
    func events(after sequence: Int64, limit: Int) async throws -> [BusEvent]
}
