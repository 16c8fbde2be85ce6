// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The bounded buffer behind one subscription, shared by the publisher side and the consumer.
///
/// Publishers only take a lock and append: they never wait for a subscriber. The consumer
/// takes everything buffered in one step (a batch), which is what makes fan-out cheaper per
/// event than a plain `AsyncStream`.
final class SubscriptionQueue: Sendable {
    enum Closed: Sendable {
        case unsubscribed
        case overflow(SubscriptionOverflow)
    }

    private struct State {
        var buffer: [BusEvent] = []
        var head = 0
        var consumer: CheckedContinuation<Void, any Error>?
        var pendingDrops = 0
        /// Of `pendingDrops`, the live-only events (no sequence): the log cannot give them back.
        var pendingUnloggedDrops = 0
        var totalDrops = 0
        var enqueued: UInt64 = 0
        var handedOut: UInt64 = 0
        /// Events the consumer has finished with, plus dropped ones: what `drain` waits for.
        var settled: UInt64 = 0
        var closed: Closed?
        var drainWaiters: [Int: (target: UInt64, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiter = 0
        /// The consumer's way to take an event on the publisher's thread (`deliverDirectly`).
        var direct: (@Sendable (BusEvent, inout EventWireForm) -> Bool)?
        /// Events the direct path took.
        var directCount = 0

        mutating func takeSatisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !drainWaiters.isEmpty else { return [] }
            let done = drainWaiters.filter { closed != nil || $0.value.target <= settled }
            for key in done.keys { drainWaiters[key] = nil }
            return done.map(\.value.continuation)
        }
    }

    let id: Int
    let filter: TopicFilter
    let options: SubscriptionOptions
    /// Which events this subscriber may receive; checked before anything is buffered, so what
    /// it may not see neither takes room nor counts as dropped.
    let visibility: EventVisibility
    /// False for in-process subscribers, which see everything: the publisher skips the check.
    let filtersByAudience: Bool
    private let state = Mutex(State())

    init(id: Int, filter: TopicFilter, options: SubscriptionOptions, visibility: EventVisibility = .everything) {
        self.id = id
        self.filter = filter
        self.options = options
        self.visibility = visibility
        self.filtersByAudience = visibility != .everything
    }

    /// Adds an event; returns false when the subscription is closed (including closed now by
    /// a `disconnect` overflow), so the bus can forget it. `wire`: the event's wire form, made
    /// by the first subscriber of this publish that writes it directly and used by the rest.
    func enqueue(_ event: BusEvent, wire: inout EventWireForm) -> Bool {
        var waiters: [CheckedContinuation<Void, Never>] = []
        let (accepted, consumer) = state.withLock { s -> (Bool, CheckedContinuation<Void, any Error>?) in
            guard s.closed == nil else { return (false, nil) }
            s.enqueued += 1
            // The consumer waits with nothing buffered or dropped: it may take the event right
            // here (under the lock, so concurrent publishers keep one order).
            if let direct = s.direct, s.consumer != nil, s.head == s.buffer.count, s.pendingDrops == 0, direct(event, &wire) {
                s.settled += 1
                s.directCount += 1
                return (true, nil)
            }
            if s.buffer.count - s.head >= options.capacity {
                switch options.overflow {
                case .dropOldest:
                    if s.buffer[s.head].sequence == nil { s.pendingUnloggedDrops += 1 }
                    s.head += 1
                    s.pendingDrops += 1
                    s.totalDrops += 1
                    s.settled += 1
                    if s.head >= 1024 && s.head * 2 >= s.buffer.count {
                        s.buffer.removeFirst(s.head)
                        s.head = 0
                    }
                case .disconnect:
                    s.settled += 1
                    s.closed = .overflow(SubscriptionOverflow(capacity: options.capacity))
                    waiters = s.takeSatisfiedWaiters()
                    defer { s.consumer = nil }
                    return (false, s.consumer)
                }
            }
            s.buffer.append(event)
            defer { s.consumer = nil }
            return (true, s.consumer)
        }
        consumer?.resume()
        for waiter in waiters { waiter.resume() }
        return accepted
    }

    /// Ends the subscription; the consumer gets what is buffered, then the end.
    func close() {
        let (consumer, waiters) = state.withLock { s in
            if s.closed == nil { s.closed = .unsubscribed }
            s.direct = nil
            defer { s.consumer = nil }
            return (s.consumer, s.takeSatisfiedWaiters())
        }
        consumer?.resume()
        for waiter in waiters { waiter.resume() }
    }

    /// Lets the consumer take events on the publisher's thread while it waits with nothing
    /// buffered: `take` returns false when it cannot take one now (the event is then buffered
    /// and wakes the consumer as usual). `take` runs under this queue's lock and must not wait.
    func deliverDirectly(_ take: @escaping @Sendable (BusEvent, inout EventWireForm) -> Bool) {
        state.withLock { $0.direct = take }
    }

    /// Events the direct path took (tests read it; no metric yet).
    var directCount: Int { state.withLock { $0.directCount } }

    /// Total events dropped by `dropOldest` so far.
    var droppedCount: Int { state.withLock { $0.totalDrops } }

    /// How many events were enqueued so far; `drain` waits until that many are settled.
    var enqueuedCount: UInt64 { state.withLock { $0.enqueued } }

    /// Whether every event enqueued up to `target` is settled, or the queue is closed.
    func isSettled(_ target: UInt64) -> Bool {
        state.withLock { $0.closed != nil || $0.settled >= target }
    }

    /// The next batch of events in order; nil once closed and empty. The consumer calling this
    /// means it has finished with every event handed out before.
    func nextBatch() async throws -> [BusEvent]? {
        while true {
            enum Step { case batch([BusEvent]), end, fail(SubscriptionOverflow), wait }
            let (step, waiters) = state.withLock { s -> (Step, [CheckedContinuation<Void, Never>]) in
                // Coming back for more means the previous batch is finished with.
                s.settled += s.handedOut
                s.handedOut = 0
                let waiters = s.takeSatisfiedWaiters()
                if s.head < s.buffer.count {
                    var batch: [BusEvent]
                    if s.head == 0 {
                        batch = s.buffer
                        s.buffer = []
                    } else {
                        batch = Array(s.buffer[s.head...])
                        s.buffer.removeAll(keepingCapacity: true)
                        s.head = 0
                    }
                    batch[0].droppedBefore = s.pendingDrops
                    batch[0].droppedUnlogged = s.pendingUnloggedDrops
                    s.pendingDrops = 0
                    s.pendingUnloggedDrops = 0
                    s.handedOut = UInt64(batch.count)
                    return (.batch(batch), waiters)
                }
                switch s.closed {
                case .overflow(let error): return (.fail(error), waiters)
                case .unsubscribed: return (.end, waiters)
                case nil: return (.wait, waiters)
                }
            }
            for waiter in waiters { waiter.resume() }
            switch step {
            case .batch(let batch): return batch
            case .end: return nil
            case .fail(let error): throw error
            case .wait: try await waitForEvents()
            }
        }
    }

    private func waitForEvents() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let wait = state.withLock { s -> Bool in
                    guard s.head == s.buffer.count, s.closed == nil, !Task.isCancelled else { return false }
                    s.consumer = c
                    return true
                }
                if !wait { c.resume() }
            }
        } onCancel: {
            state.withLock { s in
                defer { s.consumer = nil }; return s.consumer
            }?.resume()
        }
        try Task.checkCancellation()
    }

    /// Waits until every event enqueued up to `target` is settled or the queue is closed.
    /// Cancelling the waiting task ends the wait.
    func waitSettled(_ target: UInt64) async {
        let key = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let done = state.withLock { s -> Bool in
                    if s.closed != nil || s.settled >= target || Task.isCancelled { return true }
                    s.drainWaiters[key] = (target, c)
                    return false
                }
                if done { c.resume() }
            }
        } onCancel: {
            state.withLock { s in s.drainWaiters.removeValue(forKey: key) }?.continuation.resume()
        }
    }
}
