// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The replies of a streaming command, as an `AsyncSequence` for one consumer.
///
/// The handler sends intermediate replies through its `ReplyWriter` and returns the final one,
/// so the wire knows which reply ends the stream (varlink `continues`) without holding any back.
/// Bounded with backpressure: the producer waits when `capacity` replies are unread, so a slow
/// consumer never makes the daemon buffer without limit. Dropping the stream or cancelling the
/// consuming task cancels the producer. An error from the producer ends the stream.
public final class ReplyStream<Element: Sendable>: AsyncSequence, Sendable, FinishObservable {
    let channel: ReplyChannel<Element>

    init(channel: ReplyChannel<Element>) { self.channel = channel }

    deinit { channel.cancel() }

    /// Stops the stream and cancels the producer.
    public func cancel() { channel.cancel() }

    /// Calls `body` once when the stream's producer has finished, with how it ended. Gates use
    /// it to act on a stream's outcome (a paywall refunds a quota use when the command failed
    /// before it was used).
    ///
    /// The consumer sees the stream's error only after every `body` has returned, so what a
    /// body commits is visible to whoever reacts to the error. If the producer has already
    /// finished, `body` runs before this returns.
    public func whenFinished(_ body: @escaping @Sendable (StreamEnd) async -> Void) async {
        await channel.whenFinished(body)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: ReplyStream<Element>
        public mutating func next() async throws -> Element? {
            try await stream.channel.next()?.value
        }
    }

    /// The next reply with whether it is the final one; nil after the final reply.
    public func nextReply() async throws -> (value: Element, isFinal: Bool)? {
        try await channel.next()
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }

    /// Lets the producer hand intermediate replies straight to `output`, on its own thread and
    /// already encoded, whenever this stream's consumer has taken every earlier reply and is
    /// waiting for the next (so order is kept); `output` returns false when it cannot take one
    /// now (its buffer is full, or its connection closing), and the reply then comes through
    /// `next` as usual. For a transport's fan-out path: no task hop per reply.
    public func deliverDirectly(to output: @escaping @Sendable (Element, [UInt8]) -> Bool) {
        channel.attach(direct: output)
    }

    /// A stream whose elements are this stream's, transformed (used to bridge typed and JSON replies).
    func map<T: Sendable>(capacity: Int, _ transform: @escaping @Sendable (Element) throws -> T) -> ReplyStream<T> {
        let source = self
        return ReplyChannel<T>.start(capacity: capacity) { writer in
            while let (value, isFinal) = try await source.nextReply() {
                if isFinal { return try transform(value) }
                try await writer.send(transform(value))
            }
            throw CancellationError()
        }
    }
}

/// The producer's handle: `send` waits while the consumer is `capacity` replies behind.
public struct ReplyWriter<Element: Sendable>: Sendable {
    private let deliver: @Sendable (Element) async throws -> Void
    private let use: @Sendable () -> Void
    private let direct: @Sendable (() -> (Element, [UInt8])?) -> Bool

    init(channel: ReplyChannel<Element>) {
        deliver = { try await channel.send($0, isFinal: false) }
        use = { channel.markUsed() }
        direct = { channel.writeDirect($0) }
    }

    /// A writer whose replies go, transformed, to `writer` (typed replies onto a JSON stream,
    /// with no task of their own in between).
    init<Target: Sendable>(into writer: ReplyWriter<Target>, _ transform: @escaping @Sendable (Element) throws -> Target) {
        deliver = { try await writer.send(transform($0)) }
        use = { writer.markUsed() }
        direct = { make in
            writer.sendDirectly {
                guard let (element, encoded) = make(), let target = try? transform(element) else { return nil }
                return (target, encoded)
            }
        }
    }

    /// Sends one intermediate reply; throws `CancellationError` once the consumer has gone away.
    public func send(_ element: Element) async throws {
        try await deliver(element)
    }

    /// Sends one intermediate reply without waiting, straight to the consumer's transport, when
    /// the consumer has asked for that (`ReplyStream.deliverDirectly`) and is caught up: `make`
    /// gives the reply and its JSON bytes, and is called only then. False when the reply was
    /// not taken: send it with `send`. Never suspends, so a publisher may call it (fan-out).
    public func sendDirectly(_ make: () -> (Element, [UInt8])?) -> Bool {
        direct(make)
    }

    /// Says the caller has been given what the stream costs (a chat reply's first words): a
    /// failure after this does not undo the cost (the paywall keeps the quota use).
    public func markUsed() { use() }
}

/// A single-producer, single-consumer bounded channel shared by a `ReplyStream` and its writer.
final class ReplyChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [(value: Element, isFinal: Bool)] = []
        var head = 0
        var consumer: CheckedContinuation<Void, any Error>?
        var producer: CheckedContinuation<Void, any Error>?
        var finished: (any Error)??
        var cancelled = false
        var task: Task<Void, Never>?
        /// The producer's outcome once it has returned or thrown, before observers have run.
        var outcome: (any Error)??
        var observers: [@Sendable (StreamEnd) async -> Void] = []
        /// The producer said the caller got what the stream costs (`ReplyWriter.markUsed`).
        var used = false
        /// Where the producer may write replies itself (`ReplyStream.deliverDirectly`).
        var direct: (@Sendable (Element, [UInt8]) -> Bool)?
        /// The consumer has handled every reply it took and waits in `next`: a reply written
        /// directly now cannot overtake one.
        var consumerCaughtUp = false
        /// The producer, until it runs: a stream whose consumer runs it (`ReplyStream.run(into:)`).
        var deferred: (@Sendable (ReplyWriter<Element>) async throws -> Element)?
        /// Where replies go when the consumer runs the producer itself.
        var sink: (@Sendable (Element) async throws -> Void)?
        /// The sink could not take a reply (its client left): what the consumer reports.
        var sinkFailure: (any Error)?
    }
    private enum Step { case element(Element, Bool), end((any Error)?), wait }
    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Starts `body` as the producer task of a new stream; what it returns is the final reply.
    /// `deferred`: no task; the consumer runs `body` itself (`ReplyStream.run(into:)`).
    static func start(
        capacity: Int, deferred: Bool = false, _ body: @escaping @Sendable (ReplyWriter<Element>) async throws -> Element
    ) -> ReplyStream<Element> {
        let channel = ReplyChannel(capacity: capacity)
        if deferred {
            channel.state.withLock { $0.deferred = body }
            return ReplyStream(channel: channel)
        }
        // Unstructured: the producer runs while the caller reads the stream; the channel cancels it when the reader leaves.
        let task = Task {
            let outcome: (any Error)?
            do {
                let last = try await body(ReplyWriter(channel: channel))
                try await channel.send(last, isFinal: true)
                outcome = nil
            } catch {
                outcome = error
            }
            await channel.settle(outcome)
            channel.finish(outcome)
        }
        channel.attach(task)
        return ReplyStream(channel: channel)
    }

    private func attach(_ task: Task<Void, Never>) {
        let cancelled = state.withLock { s -> Bool in
            s.task = task
            return s.cancelled
        }
        if cancelled { task.cancel() }
    }

    func send(_ element: Element, isFinal: Bool) async throws {
        if let sink = state.withLock({ $0.sink }) { return try await send(element, to: sink) }
        while true {
            try Task.checkCancellation()
            let (sent, consumer) = state.withLock { s -> (Bool?, CheckedContinuation<Void, any Error>?) in
                if s.cancelled || s.finished != nil { return (nil, nil) }
                guard s.buffer.count - s.head < capacity else { return (false, nil) }
                s.buffer.append((element, isFinal))
                defer { s.consumer = nil }
                return (true, s.consumer)
            }
            guard let sent else { throw CancellationError() }
            if sent {
                consumer?.resume()
                return
            }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                    let wait = state.withLock { s -> Bool in
                        guard !s.cancelled, s.buffer.count - s.head >= capacity, !Task.isCancelled else { return false }
                        s.producer = c
                        return true
                    }
                    if !wait { c.resume() }
                }
            } onCancel: {
                state.withLock { s in
                    defer { s.producer = nil }; return s.producer
                }?.resume()
            }
        }
    }

    func markUsed() { state.withLock { $0.used = true } }

    func attach(direct: @escaping @Sendable (Element, [UInt8]) -> Bool) {
        state.withLock { $0.direct = direct }
    }

    /// Writes an intermediate reply through the consumer's direct output when nothing can be
    /// overtaken: no reply buffered, the consumer waiting, the stream still open. Under the
    /// lock, so the consumer cannot take a reply meanwhile.
    func writeDirect(_ make: () -> (Element, [UInt8])?) -> Bool {
        state.withLock { s in
            guard let direct = s.direct, s.consumerCaughtUp, s.head == s.buffer.count, !s.cancelled, s.finished == nil,
                let (element, encoded) = make()
            else { return false }
            return direct(element, encoded)
        }
    }

    /// Replies held, consumed ones not yet released included (for tests: it stays bounded).
    var storedCount: Int { state.withLock { $0.buffer.count } }

    /// Runs the observers with the producer's outcome; until they return, the consumer waits.
    func settle(_ outcome: (any Error)?) async {
        let (observers, used) = state.withLock { s -> ([@Sendable (StreamEnd) async -> Void], Bool) in
            s.outcome = .some(outcome)
            defer { s.observers = [] }
            return (s.observers, s.used)
        }
        guard !observers.isEmpty else { return }
        let end = StreamEnd(error: outcome, used: used)
        // In a task of their own: a producer cancelled because its client left must not
        // cancel what the observers commit (a refund) with it.
        // Unstructured: awaited at once; its own task only so that the producer's cancellation does not reach the observers.
        await Task { for observer in observers { await observer(end) } }.value
    }

    func finish(_ error: (any Error)?) {
        let consumer = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            if s.finished == nil { s.finished = .some(error) }
            defer { s.consumer = nil }
            return s.consumer
        }
        consumer?.resume()
    }

    /// Calls `body` once with the producer's outcome: nil when it returned its final reply, the
    /// error when it failed or was cancelled. Inline if the producer has already finished.
    func whenFinished(_ body: @escaping @Sendable (StreamEnd) async -> Void) async {
        let done = state.withLock { s -> StreamEnd? in
            if let outcome = s.outcome { return StreamEnd(error: outcome, used: s.used) }
            s.observers.append(body)
            return nil
        }
        if let done { await body(done) }
    }

    func cancel() {
        let (task, consumer, producer) = state.withLock { s in
            s.cancelled = true
            defer { s.consumer = nil; s.producer = nil }
            return (s.task, s.consumer, s.producer)
        }
        task?.cancel()
        consumer?.resume(throwing: CancellationError())
        producer?.resume(throwing: CancellationError())
    }

    func next() async throws -> (value: Element, isFinal: Bool)? {
        while true {
            let (step, producer) = state.withLock { s -> (Step, CheckedContinuation<Void, any Error>?) in
                if s.cancelled { return (.end(CancellationError()), nil) }
                // Coming back for more means every reply taken before has been handled.
                s.consumerCaughtUp = s.head == s.buffer.count
                if s.head < s.buffer.count {
                    let (element, isFinal) = s.buffer[s.head]
                    s.head += 1
                    if s.head == s.buffer.count {
                        s.buffer.removeAll(keepingCapacity: true)
                        s.head = 0
                    } else if s.head >= 64 && s.head * 2 >= s.buffer.count {
                        // A producer that keeps the buffer from ever emptying (a slow
                        // consumer) must not make it grow: drop what was consumed.
                        s.buffer.removeFirst(s.head)
                        s.head = 0
                    }
                    defer { s.producer = nil }
                    return (.element(element, isFinal), s.producer)
                }
                if let finished = s.finished { return (.end(finished), nil) }
                return (.wait, nil)
            }
            producer?.resume()
            switch step {
            case .element(let element, let isFinal): return (element, isFinal)
            case .end(let error):
                if let error { throw error }
                return nil
            case .wait:
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                        let wait = state.withLock { s -> Bool in
                            guard s.head == s.buffer.count, s.finished == nil, !s.cancelled, !Task.isCancelled else {
                                return false
                            }
                            s.consumer = c
                            return true
                        }
                        if !wait { c.resume() }
                    }
                } onCancel: {
                    self.cancel()
                }
            }
        }
    }
}

extension ReplyChannel {
    /// Whether the consumer is to run the producer (`run(into:)`): it was started deferred.
    var isDeferred: Bool { state.withLock { $0.deferred != nil } }

    /// Runs the deferred producer in the calling task, each intermediate reply to `sink` as it
    /// is sent (the producer waits while `sink` does: its transport's back-pressure), and
    /// returns the final reply; the stream's observers have run by then, as for a started
    /// stream. A reply `sink` cannot take ends the producer's `send` with `CancellationError`
    /// (its client left) and this with the sink's error. A stream that was started after all
    /// (a gate answered with a stream of its own) is relayed to `sink` as it comes.
    func run(into sink: @escaping @Sendable (Element) async throws -> Void) async throws -> Element {
        let body = state.withLock { s -> (@Sendable (ReplyWriter<Element>) async throws -> Element)? in
            guard let body = s.deferred else { return nil }
            s.deferred = nil
            s.sink = sink
            s.consumerCaughtUp = true
            return body
        }
        guard let body else {
            while let (value, isFinal) = try await next() {
                if isFinal { return value }
                try await sink(value)
            }
            throw CancellationError()
        }
        let outcome: (any Error)?
        var last: Element?
        do {
            last = try await body(ReplyWriter(channel: self))
            outcome = nil
        } catch {
            outcome = error
        }
        await settle(outcome)
        finish(outcome)
        if let failure = state.withLock({ $0.sinkFailure }) { throw failure }
        if let outcome { throw outcome }
        guard let last else { throw CancellationError() }
        return last
    }

    /// An intermediate reply of a producer run by its consumer: to the sink, while the direct
    /// path (which would overtake it) stays shut.
    fileprivate func send(_ element: Element, to sink: @Sendable (Element) async throws -> Void) async throws {
        let open = state.withLock { s -> Bool in
            guard !s.cancelled, s.finished == nil, s.sinkFailure == nil else { return false }
            s.consumerCaughtUp = false
            return true
        }
        guard open else { throw CancellationError() }
        try Task.checkCancellation()
        do {
            try await sink(element)
        } catch {
            state.withLock { s in
                if s.sinkFailure == nil { s.sinkFailure = error }
                s.cancelled = true
            }
            throw CancellationError()
        }
        state.withLock { $0.consumerCaughtUp = true }
    }
}
