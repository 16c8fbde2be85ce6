// SPDX-License-Identifier: Apache-2.0
import BusCore

/// Where a database hands the events of each commit, in commit order, once the commit is
/// durable: the database is given its outbox when it is built and knows nothing of who reads
/// it. An `OutboxRelay` publishes the batches on the bus (the bus is built after the database:
/// its gates read it). With several instances on PostgreSQL, other instances' commits arrive
/// here too, through the event feed.
///
/// The buffer is unbounded on purpose: a commit never waits for a subscriber, and the relay
/// only hands each event to `EventBus.publish`, which never waits either.
public final class EventOutbox: Sendable {
    /// The committed batches, in commit order; ends after the database closes.
    public let batches: AsyncStream<[BusEvent]>
    private let continuation: AsyncStream<[BusEvent]>.Continuation

    public init() {
        (batches, continuation) = AsyncStream.makeStream(of: [BusEvent].self, bufferingPolicy: .unbounded)
    }

    /// A commit's events (called by the database after the commit, in commit order).
    func committed(_ events: [BusEvent]) {
        guard !events.isEmpty else { return }
        continuation.yield(events)
    }

    /// Nothing more will be committed: the relay finishes what is queued and returns.
    func finish() { continuation.finish() }
}
