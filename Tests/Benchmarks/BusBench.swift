// SPDX-License-Identifier: Apache-2.0
import Bus

// Release-mode benchmarks of the in-process bus and of durable writes.
// Run: swift run -c release appd-bench [name-prefix]
// Prints one JSON object per line: {"name": …, "value": …, "unit": …}.

struct Ping: Command {
    static let method = "io.appd.Bench.Ping"
    typealias Reply = Pong
    var n: Int
}

struct Pong: Codable, Sendable {
    var n: Int
}

struct Tick: Event {
    static let topic = "bench.tick"
    static let audience = EventAudience.admin
    var n: Int
}

/// A gate that only passes the command on: the cost of the chain itself.
struct PassThrough: Gate {
    let name: String
    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        try await next(envelope)
    }
}

func report(_ name: String, _ value: Double, _ unit: String) {
    let rounded = (value * 100).rounded() / 100
    print("{\"name\": \"\(name)\", \"value\": \(rounded), \"unit\": \"\(unit)\"}")
}

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

func makeBus() throws -> EventBus {
    let bus = EventBus(gates: (1...5).map { PassThrough(name: "gate\($0)") }, logger: Logger(label: "bench", level: .error))
    try bus.register(Ping.self) { ping, _ in Pong(n: ping.n) }
    return bus
}

/// Typed round trips per second with `callers` concurrent callers; with a `timeout`, each call
/// runs against a deadline (as every call over the socket does).
func commandThroughput(callers: Int, calls: Int, timeout: Duration? = nil) async throws -> Double {
    let bus = try makeBus()
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<callers {
            group.addTask {
                for i in 0..<(calls / callers) { _ = try await bus.send(Ping(n: i), timeout: timeout) }
            }
        }
        try await group.waitForAll()
    }
    return Double(calls) / seconds(ContinuousClock.now - start)
}

/// p99 latency of single typed calls, in microseconds.
func commandP99(calls: Int) async throws -> Double {
    let bus = try makeBus()
    var samples: [Duration] = []
    samples.reserveCapacity(calls)
    for i in 0..<calls {
        let start = ContinuousClock.now
        _ = try await bus.send(Ping(n: i))
        samples.append(ContinuousClock.now - start)
    }
    samples.sort()
    return seconds(samples[calls * 99 / 100]) * 1e6
}

/// Event deliveries per second (events × subscribers) with `subscribers` consumers.
func eventThroughput(subscribers: Int, events: Int) async throws -> (rate: Double, dropped: Int) {
    let bus = EventBus(logger: Logger(label: "bench", level: .error))
    let options = SubscriptionOptions(capacity: events, overflow: .dropOldest)
    let subscriptions = try (0..<subscribers).map { _ in try bus.subscribe(Tick.self, options: options) }
    let start = ContinuousClock.now
    let consumers = subscriptions.map { subscription in
        Task {
            var seen = 0
            for try await _ in subscription.subscription {
                seen += 1
                if seen == events { break }
            }
            return seen
        }
    }
    for i in 0..<events { bus.publish(Tick(n: i), causedBy: nil) }
    var delivered = 0
    for consumer in consumers { delivered += try await consumer.value }
    let elapsed = ContinuousClock.now - start
    return (Double(delivered) / seconds(elapsed), subscriptions.reduce(0) { $0 + $1.subscription.droppedCount })
}

/// Items per second through a plain AsyncStream<Int>, one producer and one consumer.
func asyncStreamBaseline(items: Int) async -> Double {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let start = ContinuousClock.now
    let consumer = Task {
        var seen = 0
        for await _ in stream { seen += 1 }
        return seen
    }
    for i in 0..<items { continuation.yield(i) }
    continuation.finish()
    let seen = await consumer.value
    return Double(seen) / seconds(ContinuousClock.now - start)
}

@main
enum Bench {
    static func main() async throws {
        // An optional argument runs only the figures whose name starts with it.
        let only = CommandLine.arguments.dropFirst().first ?? ""
        func wanted(_ section: String) -> Bool { only.isEmpty || section.hasPrefix(only) || only.hasPrefix(section) }

        if wanted("bus.command") {
            let calls = 1_000_000
            _ = try await commandThroughput(callers: 1, calls: 50_000)  // warm-up
            report("bus.command.rps.1", try await commandThroughput(callers: 1, calls: calls), "calls/s")
            report("bus.command.rps.8", try await commandThroughput(callers: 8, calls: calls), "calls/s")
            report("bus.command.rps.deadline.1", try await commandThroughput(callers: 1, calls: calls, timeout: .seconds(30)), "calls/s")
            report("bus.command.p99_us", try await commandP99(calls: 200_000), "us")
        }
        if wanted("bus.event") || wanted("baseline") {
            let events = 500_000
            let baseline = await asyncStreamBaseline(items: events)
            report("baseline.asyncstream.ips", baseline, "items/s")
            let one = try await eventThroughput(subscribers: 1, events: events)
            report("bus.event.dps.1", one.rate, "deliveries/s")
            let eight = try await eventThroughput(subscribers: 8, events: events)
            report("bus.event.dps.8", eight.rate, "deliveries/s")
            report("bus.event.dps.8.vs_baseline", eight.rate / baseline, "ratio")
            report("bus.event.dropped", Double(one.dropped + eight.dropped), "events")
        }
        if wanted("json.encode") {
            _ = try replyEncoding(replies: 20_000)  // warm-up
            let (tree, bytes) = try replyEncoding(replies: 200_000)
            report("json.encode.tree_us", tree, "us")
            report("json.encode.bytes_us", bytes, "us")
        }
        if wanted("storage.write") {
            let single = try await durableWrites(writers: 1, writes: 2_000)
            report("storage.write.wps.1", single, "writes/s")
            let grouped = try await durableWrites(writers: 64, writes: 50_000)
            report("storage.write.wps.64", grouped, "writes/s")
            report("storage.write.group_commit_gain", grouped / single, "ratio")
        }
    }
}
