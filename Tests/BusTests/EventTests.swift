// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing
import TestSupport

@Suite struct EventTests {
    @Test func subscribersByTypeTopicAndPatternEachGetTheEvent() async throws {
        let bus = EventBus()
        let byType = try bus.subscribe(TodoCompleted.self)
        let byTopic = try bus.subscribe("todos.completed")
        let byPattern = try bus.subscribe("todos.*")
        let everything = try bus.subscribe(">")
        let other = try bus.subscribe("auth.*")

        bus.publish(TodoCompleted(id: 7), causedBy: nil)
        bus.publish(UserSignedUp(email: "a@b.c"), causedBy: nil)

        var typed = byType.makeAsyncIterator()
        #expect(try await typed.next()?.event == TodoCompleted(id: 7))
        var topic = byTopic.makeAsyncIterator()
        #expect(try await topic.next()?.decode(as: TodoCompleted.self) == TodoCompleted(id: 7))
        var pattern = byPattern.makeAsyncIterator()
        #expect(try await pattern.next()?.topic == "todos.completed")
        var all = everything.makeAsyncIterator()
        #expect(try await all.next()?.topic == "todos.completed")
        #expect(try await all.next()?.topic == "auth.userSignedUp")
        var auth = other.makeAsyncIterator()
        #expect(try await auth.next()?.decode(as: UserSignedUp.self)?.email == "a@b.c")
    }

    @Test func jsonEventsReachTypedSubscribers() async throws {
        let bus = EventBus()
        let typed = try bus.subscribe(TodoCreated.self)
        try bus.publish(topic: "todos.created", payload: ["id": 3], causedBy: nil)
        var iterator = typed.makeAsyncIterator()
        #expect(try await iterator.next()?.event == TodoCreated(id: 3))
        #expect(throws: InvalidTopic.self) { try bus.publish(topic: "todos.*", payload: [:], causedBy: nil) }
    }

    @Test func unsubscribingIsIdempotentAndEndsTheSequence() async throws {
        let bus = EventBus()
        let subscription = try bus.subscribe("todos.*")
        bus.publish(TodoCreated(id: 1), causedBy: nil)
        subscription.cancel()
        subscription.cancel()
        bus.publish(TodoCreated(id: 2), causedBy: nil)
        var ids: [Int] = []
        for try await event in subscription { ids.append(event.decode(as: TodoCreated.self)?.id ?? -1) }
        #expect(ids == [1])
        #expect(bus.counters.subscriptions == 0)
    }

    @Test func droppingASubscriptionUnsubscribes() throws {
        let bus = EventBus()
        do { _ = try bus.subscribe(">") }
        #expect(bus.counters.subscriptions == 0)
    }

    @Test func aThrowingListenerIsLoggedAndOthersStillReceive() async throws {
        let logs = InMemoryLogHandler()
        let bus = EventBus(logger: Logger(label: "bus", handler: logs))
        let received = Mutex<[Int]>([])
        let failing = try bus.listen(TodoCompleted.self, name: "failing") { event, _ in
            if event.id == 1 { throw Denied(reason: "listener bug") }
        }
        let healthy = try bus.listen(TodoCompleted.self, name: "healthy") { event, _ in
            received.withLock { $0.append(event.id) }
        }
        bus.publish(TodoCompleted(id: 1), causedBy: nil)
        bus.publish(TodoCompleted(id: 2), causedBy: nil)
        try await bus.drain()
        #expect(received.withLock { $0 } == [1, 2])
        let errors = logs.records.filter { $0.level == .error }
        #expect(errors.count == 1)
        #expect(errors.first?.metadata["listener"] == "failing")
        failing.cancel()
        healthy.cancel()
    }

    @Test func drainWaitsForListenersToFinish() async throws {
        let bus = EventBus()
        let done = Mutex(0)
        let listener = try bus.listen(TodoCompleted.self, name: "slow") { _, _ in
            try await Task.sleep(for: .milliseconds(5))
            done.withLock { $0 += 1 }
        }
        for i in 0..<20 { bus.publish(TodoCompleted(id: i), causedBy: nil) }
        // The wait is for the listeners; the timeout is only a safety net (a loaded machine once
        // took 11.6 s for these 20 × 5 ms sleeps, past drain's default 10 s).
        try await bus.drain(timeout: .seconds(120))
        #expect(done.withLock { $0 } == 20)
        listener.cancel()
    }

    @Test func drainTimesOutOnAStuckSubscriber() async throws {
        let bus = EventBus()
        let stuck = try bus.subscribe(">")
        bus.publish(TodoCompleted(id: 1), causedBy: nil)
        await #expect(throws: DrainTimeout(pending: 1)) { try await bus.drain(timeout: .milliseconds(50)) }
        stuck.cancel()
    }

    @Test func dropOldestKeepsTheNewestAndCountsExactly() async throws {
        let bus = EventBus()
        let subscription = bus.subscribe(TopicFilter.all, options: .init(capacity: 10, overflow: .dropOldest))
        for i in 0..<25 { bus.publish(TodoCreated(id: i), causedBy: nil) }
        #expect(subscription.droppedCount == 15)
        var iterator = subscription.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.droppedBefore == 15)
        #expect(first?.decode(as: TodoCreated.self)?.id == 15)
        var ids = [15]
        for _ in 0..<9 {
            let event = try await iterator.next()
            #expect(event?.droppedBefore == 0)
            ids.append(event?.decode(as: TodoCreated.self)?.id ?? -1)
        }
        #expect(ids == Array(15..<25))
        // A second overflow is reported on the first event after the gap.
        for i in 25..<40 { bus.publish(TodoCreated(id: i), causedBy: nil) }
        let afterGap = try await iterator.next()
        #expect(afterGap?.droppedBefore == 5)
        #expect(afterGap?.decode(as: TodoCreated.self)?.id == 30)
        #expect(subscription.droppedCount == 20)
    }

    @Test func disconnectDeliversTheBufferThenATypedError() async throws {
        let bus = EventBus()
        let subscription = bus.subscribe(TopicFilter.all, options: .init(capacity: 4, overflow: .disconnect))
        for i in 0..<6 { bus.publish(TodoCreated(id: i), causedBy: nil) }
        #expect(bus.counters.subscriptions == 0)
        var ids: [Int] = []
        await #expect(throws: SubscriptionOverflow(capacity: 4)) {
            for try await event in subscription { ids.append(event.decode(as: TodoCreated.self)?.id ?? -1) }
        }
        #expect(ids == [0, 1, 2, 3])
    }

    @Test func publishingNeverWaitsForASlowSubscriber() async throws {
        let bus = EventBus()
        let slow = bus.subscribe(TopicFilter.all, options: .init(capacity: 8))
        let start = ContinuousClock.now
        for i in 0..<100_000 { bus.publish(TodoCreated(id: i), causedBy: nil) }
        // Nobody reads `slow`; the publisher still finished, and memory stayed bounded.
        #expect(slow.droppedCount == 100_000 - 8)
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    @Test func causationLinksEventsToTheirCommand() async throws {
        let bus = EventBus()
        let subscription = try bus.subscribe(TodoCreated.self)
        let cause = Envelope(name: "io.appd.Todos.Add", requirements: [], caller: .daemon, logger: Logger(label: "t"))
        bus.publish(TodoCreated(id: 1), causedBy: cause)
        var iterator = subscription.makeAsyncIterator()
        let received = try await iterator.next()
        #expect(received?.metadata.causationID == cause.id)
        #expect(received?.metadata.correlationID == cause.correlationID)
    }

    @Test func cancellingAWaitingConsumerEndsItsLoop() async throws {
        let bus = EventBus()
        let subscription = try bus.subscribe(">")
        let waiting = Flag()
        let consumer = Task {
            waiting.set()
            for try await _ in subscription {}
        }
        #expect(await eventually { waiting.isSet })
        consumer.cancel()
        await #expect(throws: CancellationError.self) { try await consumer.value }
    }
}

/// A payload with every shape events use, to pin the IDL the reflector derives.
struct EveryShape: Event {
    static let topic = "test.shapes"
    static let audience = EventAudience.capability("test.read")
    struct Inner: Codable, Sendable { var a: Int; var b: Double? }
    var text: String
    var count: Int64
    var ratio: Double
    var flag: Bool
    var maybe: String?
    var inner: Inner
    var list: [String]
    var extra: JSONValue
}

@Suite struct EventSchemaTests {
    @Test func theIDLTypeIsReadFromTheCodableShape() throws {
        let schema = try EventSchema(of: EveryShape.self)
        #expect(schema.description == "(text: string, count: int, ratio: float, flag: bool, maybe: ?string, inner: (a: int, b: ?float), list: []string, extra: object)")
        #expect(
            schema.problem(
                with: try JSONValue(
                    encoding: EveryShape(
                        text: "t", count: 1, ratio: 0.5, flag: true, maybe: nil, inner: .init(a: 1, b: nil), list: ["x"], extra: ["k": 1]))) == nil)
        #expect(schema.problem(with: ["text": "t"]) == "count: missing")
    }

    @Test func visibilityFollowsTheAudience() {
        let scope = PluginScope(plugin: "p", publishes: [], subscribes: [">"], calls: [], capabilities: ["test.read"])
        #expect(EventVisibility.admin.admits(audience: .owner, owner: "u1"))
        #expect(EventVisibility.admin.admits(audience: .admin, owner: nil))
        #expect(!EventVisibility.admin.admits(audience: .capability("test.read"), owner: nil))
        #expect(EventVisibility.user("u1").admits(audience: .owner, owner: "u1"))
        #expect(!EventVisibility.user("u1").admits(audience: .owner, owner: "u2"))
        #expect(!EventVisibility.user("u1").admits(audience: .owner, owner: nil))
        #expect(!EventVisibility.user("u1").admits(audience: .admin, owner: "u1"))
        #expect(EventVisibility.plugin(scope).admits(audience: .capability("test.read"), owner: nil))
        #expect(!EventVisibility.plugin(scope).admits(audience: .capability("other"), owner: nil))
    }

    @Test func aLiveSubscriptionNeverBuffersWhatItMayNotSee() async throws {
        let bus = EventBus()
        try bus.topics.register(
            TopicInfo(topic: "test.owned", version: 1, schema: try EventSchema(parsing: "(userId: string)"), audience: .owner, durable: false, publisher: "test", external: false))
        let mine = bus.subscribe(.all, options: SubscriptionOptions(capacity: 2, overflow: .dropOldest), visibility: .user("u1"))
        for _ in 0..<10 { try bus.publish(topic: "other.thing", payload: [:], causedBy: nil) }  // admin-only: not for u1
        bus.publish(BusEvent(topic: "test.owned", payload: .json([:]), owner: "u1"))
        let next = Task {
            var iterator = mine.makeAsyncIterator()
            return try await iterator.next()
        }
        let timer = Task {
            try await Task.sleep(for: .seconds(10))
            next.cancel()
        }
        let first = try? await next.value
        timer.cancel()
        // What u1 may not see neither took room in its buffer nor counts as dropped.
        #expect(first?.owner == "u1" && first?.droppedBefore == 0)
        #expect(mine.droppedCount == 0)
    }
}

/// Security review finding 3: the fan-out index remembers which subscriptions a topic reaches
/// and changes only what a subscribing or leaving subscription touches; what each receives
/// stays exactly what its patterns match.
@Suite struct SubscriptionIndexTests {
    static func ids(_ subscription: Subscription) async throws -> [Int] {
        subscription.cancel()
        var ids: [Int] = []
        for try await event in subscription { ids.append(event.decode(as: TodoCreated.self)?.id ?? -1) }
        return ids
    }

    @Test func subscribingAndLeavingKeepEveryRouteRight() async throws {
        let bus = EventBus()
        let a = try bus.subscribe("todos.*")
        bus.publish(TodoCreated(id: 1), causedBy: nil)  // remembered: todos.created reaches a
        let b = try bus.subscribe("chat.>")
        bus.publish(TodoCreated(id: 2), causedBy: nil)
        let c = try bus.subscribe(">")  // a wildcard first token: reaches every topic
        bus.publish(TodoCreated(id: 3), causedBy: nil)
        let d = bus.subscribe(try TopicFilter(anyOf: ["auth.x", "todos.created"]))
        bus.publish(TodoCreated(id: 4), causedBy: nil)
        a.cancel()
        bus.publish(TodoCreated(id: 5), causedBy: nil)
        let e = try bus.subscribe("*.created")
        bus.publish(TodoCreated(id: 6), causedBy: nil)
        #expect(try await Self.ids(a) == [1, 2, 3, 4])
        #expect(try await Self.ids(b) == [])
        #expect(try await Self.ids(c) == [3, 4, 5, 6])
        #expect(try await Self.ids(d) == [4, 5, 6])
        #expect(try await Self.ids(e) == [6])
        bus.publish(TodoCreated(id: 7), causedBy: nil)
        #expect(bus.counters.subscriptions == 0)
    }
}
