// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
import Synchronization
import Testing
import TestSupport

/// A stream whose consumer runs the producer itself (`ReplyStream.run(into:)`, what a varlink
/// connection's worker does): replies reach the sink in order, in the consumer's task, with
/// the same outcome rules as a started stream.
@Suite struct ReplyStreamRunTests {
    struct SinkFailed: Error {}

    /// Set around `run` only: a producer that sees it runs in the consumer's task (a task
    /// started when the stream was made, before it was set, would not).
    enum Consumer {
        @TaskLocal static var mark = 0
    }

    @Test func theProducerRunsInTheConsumersTaskAndEachReplyReachesTheSinkInOrder() async throws {
        let producerSaw = Mutex(0)
        let stream = ReplyChannel<Int>.start(capacity: 4, deferred: true) { writer in
            producerSaw.withLock { $0 = Consumer.mark }
            for n in 1...100 { try await writer.send(n) }
            return 101
        }
        #expect(stream.channel.isDeferred)
        let seen = Mutex<[Int]>([])
        let last = try await Consumer.$mark.withValue(7) {
            try await stream.run { n in seen.withLock { $0.append(n) } }
        }
        #expect(last == 101)
        #expect(seen.withLock { $0 } == Array(1...100))
        #expect(producerSaw.withLock { $0 } == 7)
        #expect(!stream.channel.isDeferred)
    }

    @Test func observersRunBeforeTheOutcomeAndAFailedSinkEndsTheProducer() async throws {
        let producerSaw = Mutex<(any Error)?>(nil)
        let stream = ReplyChannel<Int>.start(capacity: 4, deferred: true) { writer in
            do {
                for n in 1...10 { try await writer.send(n) }
            } catch {
                producerSaw.withLock { $0 = error }
                throw error
            }
            return 0
        }
        let observed = Mutex<StreamEnd?>(nil)
        await stream.whenFinished { end in observed.withLock { $0 = end } }
        let sent = Mutex(0)
        await #expect(throws: SinkFailed.self) {
            _ = try await stream.run { _ in
                // The client goes away at the third reply.
                guard
                    sent.withLock({
                        $0 += 1; return $0
                    }) < 3
                else { throw SinkFailed() }
            }
        }
        // The producer was told its consumer left (not the sink's own error)…
        #expect(producerSaw.withLock { $0 } is CancellationError)
        // …and the observers (a paywall's refund) saw that outcome before `run` returned.
        #expect(observed.withLock { $0?.error } is CancellationError)
        #expect(sent.withLock { $0 } == 3)
    }

    @Test func theDirectPathIsShutWhileTheSinkWaits() async throws {
        let direct = Mutex<[Int]>([])
        let stream = ReplyChannel<Int>.start(capacity: 4, deferred: true) { writer in
            try await writer.send(1)
            // Between sends the consumer is caught up: a publisher may write directly.
            #expect(writer.sendDirectly { (2, [2]) })
            try await writer.send(3)
            return 4
        }
        stream.deliverDirectly { value, _ in
            direct.withLock { $0.append(value) }; return true
        }
        let order = Mutex<[Int]>([])
        let last = try await stream.run { n in
            // While the sink waits (its transport's back-pressure), nothing may overtake it.
            #expect(!stream.channel.writeDirect { (99, [99]) })
            order.withLock { $0.append(n) }
        }
        #expect(last == 4)
        #expect(order.withLock { $0 } == [1, 3])
        #expect(direct.withLock { $0 } == [2])
    }

    @Test func aStreamStartedAfterAllIsRelayedInOrder() async throws {
        let stream = ReplyChannel<Int>.start(capacity: 2) { writer in
            for n in 1...20 { try await writer.send(n) }
            return 21
        }
        #expect(!stream.channel.isDeferred)
        let seen = Mutex<[Int]>([])
        let last = try await stream.run { n in seen.withLock { $0.append(n) } }
        #expect(last == 21)
        #expect(seen.withLock { $0 } == Array(1...20))
    }

    @Test func aFailingProducerFailsTheRun() async throws {
        struct Broke: Error {}
        let stream = ReplyChannel<Int>.start(capacity: 4, deferred: true) { writer in
            try await writer.send(1)
            throw Broke()
        }
        let seen = Mutex<[Int]>([])
        await #expect(throws: Broke.self) { _ = try await stream.run { n in seen.withLock { $0.append(n) } } }
        #expect(seen.withLock { $0 } == [1])
    }
}
