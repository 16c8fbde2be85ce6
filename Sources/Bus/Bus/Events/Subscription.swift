// SPDX-License-Identifier: Apache-2.0
/// A live subscription: an `AsyncSequence` of `BusEvent`s matching its filter.
///
/// Dropping the subscription (or calling `cancel`) unsubscribes; both are idempotent.
public final class Subscription: AsyncSequence, Sendable {
    public typealias Element = BusEvent

    let queue: SubscriptionQueue
    private let unsubscribe: @Sendable (Int) -> Void

    init(queue: SubscriptionQueue, unsubscribe: @escaping @Sendable (Int) -> Void) {
        self.queue = queue
        self.unsubscribe = unsubscribe
    }

    deinit { cancel() }

    public var filter: TopicFilter { queue.filter }
    public var options: SubscriptionOptions { queue.options }
    /// Events discarded by the `dropOldest` policy so far.
    public var droppedCount: Int { queue.droppedCount }

    /// Unsubscribes; events already buffered are still delivered, then the sequence ends.
    public func cancel() {
        unsubscribe(queue.id)
        queue.close()
    }

    /// The events buffered now, all at once (waiting for one when there are none), or nil once
    /// the subscription has ended: for a consumer that acts once per batch (saves its position
    /// once for all of them). Asking again means the previous batch is finished with. Not to be
    /// mixed with iterating the subscription.
    public func nextBatch() async throws -> [BusEvent]? { try await queue.nextBatch() }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: Subscription
        var batch: [BusEvent] = []
        var index = 0

        public mutating func next() async throws -> BusEvent? {
            if index < batch.count {
                defer { index += 1 }
                return batch[index]
            }
            batch = []
            guard let next = try await subscription.queue.nextBatch() else { return nil }
            batch = next
            index = 1
            return next[0]
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: self) }
}

/// A subscription to one event type, yielding decoded events with their metadata.
public struct TypedSubscription<E: Event>: AsyncSequence, Sendable {
    public typealias Element = Received<E>
    public let subscription: Subscription

    public struct AsyncIterator: AsyncIteratorProtocol {
        var inner: Subscription.AsyncIterator
        public mutating func next() async throws -> Received<E>? {
            while let event = try await inner.next() {
                if let value = event.decode(as: E.self) { return Received(event: value, metadata: event) }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(inner: subscription.makeAsyncIterator())
    }

    public func cancel() { subscription.cancel() }
}

/// A typed event together with its bus metadata.
public struct Received<E: Event>: Sendable {
    public let event: E
    public let metadata: BusEvent
}

/// A running listener task; `cancel` stops it and unsubscribes.
public struct Listener: Sendable {
    let subscription: Subscription
    let task: Task<Void, Never>

    public func cancel() {
        subscription.cancel()
        task.cancel()
    }
}
