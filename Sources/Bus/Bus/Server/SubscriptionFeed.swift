// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// One `io.appd.Bus.Subscribe` stream: replays the log from `since` (when asked), then
/// delivers live events, filling a gap from the log when the subscriber fell behind its live
/// buffer. Apart from the handler, and with the rare paths in functions of their own, so that a
/// subscription waiting for its next event holds a small async frame (thousands stay open).
final class SubscriptionFeed: Sendable {
    let filter: TopicFilter
    let visibility: EventVisibility
    let topics: EventTopics
    let writer: ReplyWriter<JSONValue>
    /// The durable log, when the subscriber asked for it (`since`).
    let replay: (any EventReplay)?
    let encoded: EncodedEvents
    /// A session-bound stream's: once it is stopped (the session failed a check), nothing more
    /// is delivered.
    let stop: StopSignal?
    /// The sequence of the last logged event delivered (or replayed): one at or before it is
    /// not delivered again. Shared by this feed's task and the publishers' direct path, which
    /// take turns (the direct path runs only while the task waits for the queue).
    private let position = Atomic<Int64>(0)

    init(
        filter: TopicFilter, visibility: EventVisibility, topics: EventTopics, writer: ReplyWriter<JSONValue>,
        replay: (any EventReplay)?, encoded: EncodedEvents, stop: StopSignal? = nil
    ) {
        self.stop = stop
        self.filter = filter
        self.visibility = visibility
        self.topics = topics
        self.writer = writer
        self.replay = replay
        self.encoded = encoded
    }

    /// Serves until the subscriber goes away (then throws `CancellationError`), or `stop` is
    /// stopped (then nothing more is delivered, and it ends at its next step).
    func run(_ subscription: Subscription, since: Int64?) async throws {
        if let since { position.store(try await replayLog(after: since), ordering: .relaxed) }
        // Live: while this task waits with nothing buffered, a publisher hands the event's
        // bytes straight to the subscriber's connection (no task hop per delivery); what the
        // connection cannot take now comes through the queue and this loop.
        subscription.queue.deliverDirectly { [self] event, wire in deliverDirectly(event, &wire) }
        for try await event in subscription {
            let replayed = position.load(ordering: .relaxed)
            if let sequence = event.sequence, sequence <= replayed { continue }
            if event.droppedBefore > 0, replay != nil, let sequence = event.sequence {
                position.store(try await recover(before: event, sequence: sequence, replayed: replayed), ordering: .relaxed)
                continue
            }
            try await deliver(event)
            if let sequence = event.sequence { position.store(sequence, ordering: .relaxed) }
        }
        throw CancellationError()
    }

    /// The publisher's side of `run`'s loop for one event (under the queue's lock, while the
    /// task waits): true when the event is delivered or is one to skip. `wire`: the event's
    /// form this publish made already for another subscriber, or to make here.
    private func deliverDirectly(_ event: BusEvent, _ wire: inout EventWireForm) -> Bool {
        if isStopped { return true }  // skipped: the stream is ending
        guard event.droppedBefore == 0 else { return false }
        if let sequence = event.sequence, sequence <= position.load(ordering: .relaxed) { return true }
        guard writer.sendDirectly({ wire.get { encoded.wire(event) } }) else { return false }
        if let sequence = event.sequence { position.store(sequence, ordering: .relaxed) }
        return true
    }

    /// A page of the log after `sequence`: a signed-in user's through the owner index (the
    /// only events it may see), everyone else's whole.
    private func page(after sequence: Int64, _ replay: any EventReplay) async throws -> [BusEvent] {
        if case .user(let owner) = visibility { return try await replay.events(about: owner, after: sequence, limit: 512) }
        return try await replay.events(after: sequence, limit: 512)
    }

    /// Every visible logged event after `since`; returns the last sequence read.
    @inline(never)
    private func replayLog(after since: Int64) async throws -> Int64 {
        guard let replay else { return since }
        var replayed = since
        while true {
            let page = try await page(after: replayed, replay)
            for event in page {
                replayed = event.sequence ?? replayed
                if visible(event) { try await deliver(event) }
            }
            // Pages end at a byte budget too: only an empty page is the end.
            if page.isEmpty { return replayed }
        }
    }

    /// A subscriber that asked for the log and fell behind its live buffer: what was dropped
    /// and is durable comes back from the log, in order (a dropped event at or before the
    /// position was delivered already, from the log); only live-only events stay reported as
    /// dropped. Returns the new position.
    @inline(never)
    private func recover(before event: BusEvent, sequence: Int64, replayed start: Int64) async throws -> Int64 {
        guard let replay else { return start }
        var replayed = start
        while replayed < sequence - 1 {
            let page = try await page(after: replayed, replay).filter { ($0.sequence ?? 0) < sequence }
            for missed in page {
                replayed = missed.sequence ?? replayed
                if visible(missed) { try await deliver(missed) }
            }
            if page.isEmpty { break }
        }
        var live = event
        live.droppedBefore = event.droppedUnlogged
        try await deliver(live)
        return sequence
    }

    private func visible(_ event: BusEvent) -> Bool {
        filter.matches(event.topic) && visibility.admits(audience: topics.audience(of: event.topic), owner: event.owner)
    }

    @inline(never)
    private func deliver(_ event: BusEvent) async throws {
        if isStopped { throw CancellationError() }
        try await writer.send(encoded.json(event))
    }

    private var isStopped: Bool { stop?.isStopped ?? false }
}

/// Events in their wire form (the IDL's `Event`), each encoded once however many subscribers
/// receive it: a fan-out to 50 subscribers encodes an event once, not 50 times. Keeps the most
/// recent few (an event reaches its live subscribers within moments of each other).
final class EncodedEvents: Sendable {
    private struct Entry {
        var id: MessageID
        /// The same id comes without a sequence (live only) and with one (logged), and redacted
        /// (replayed after the account was deleted): never serve one form for another.
        var sequence: Int64?
        var redacted: Bool
        var json: JSONValue
        var bytes: [UInt8]
    }
    private let recent = Mutex<[Entry]>([])
    private let capacity = 64

    func json(_ event: BusEvent) -> JSONValue { wire(event).json }

    /// The event as the IDL's `Event` and as its JSON bytes (what the direct path writes).
    func wire(_ event: BusEvent) -> (json: JSONValue, bytes: [UInt8]) {
        // A subscriber told of dropped events gets its own count: not shared.
        guard event.droppedBefore == 0 else { return Self.encoded(event) }
        let hit = recent.withLock { entries in
            entries.last { $0.id == event.id && $0.sequence == event.sequence && $0.redacted == event.redacted }.map { ($0.json, $0.bytes) }
        }
        if let hit { return hit }
        let (json, bytes) = Self.encoded(event)
        recent.withLock { entries in
            if entries.count >= capacity { entries.removeFirst(capacity / 2) }
            entries.append(Entry(id: event.id, sequence: event.sequence, redacted: event.redacted, json: json, bytes: bytes))
        }
        return (json, bytes)
    }

    private static func encoded(_ event: BusEvent) -> (json: JSONValue, bytes: [UInt8]) {
        (encode(event), bytes(event))
    }

    static func encode(_ event: BusEvent) -> JSONValue {
        var object: [String: JSONValue] = [
            "topic": .string(event.topic), "time": .string(event.timestamp.rfc3339), "dropped": .int(Int64(event.droppedBefore)),
            "id": .string(event.id.description), "correlationId": .string(event.correlationID.description), "version": .int(Int64(event.version)),
        ]
        do { object["payload"] = try event.json() } catch { object["payload"] = .object([:]) }
        if let sequence = event.sequence { object["seq"] = .int(sequence) }
        if let causation = event.causationID { object["causationId"] = .string(causation.description) }
        if event.redacted { object["redacted"] = .bool(true) }
        return .object(object)
    }

    /// `JSONWriter.bytes(encode(event))`, with the payload's text spliced in as the event log
    /// encoded it (not parsed and written again): the members in `encode`'s sorted key order.
    static func bytes(_ event: BusEvent) -> [UInt8] {
        let payload = (try? event.jsonBytes()) ?? Array("{}".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 200)
        func member(_ key: StaticString, first: Bool = false) {
            if !first { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
            out.append(contentsOf: "\":".utf8)
        }
        out.append(UInt8(ascii: "{"))
        if let causation = event.causationID {
            member("causationId", first: true)
            JSONWriter.writeString(causation.description, into: &out)
            member("correlationId")
        } else {
            member("correlationId", first: true)
        }
        JSONWriter.writeString(event.correlationID.description, into: &out)
        member("dropped")
        JSONWriter.writeInt(Int64(event.droppedBefore), into: &out)
        member("id")
        JSONWriter.writeString(event.id.description, into: &out)
        member("payload")
        out.append(contentsOf: payload)
        if event.redacted {
            member("redacted")
            out.append(contentsOf: "true".utf8)
        }
        if let sequence = event.sequence {
            member("seq")
            JSONWriter.writeInt(sequence, into: &out)
        }
        member("time")
        JSONWriter.writeString(event.timestamp.rfc3339, into: &out)
        member("topic")
        JSONWriter.writeString(event.topic, into: &out)
        member("version")
        JSONWriter.writeInt(Int64(event.version), into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }
}
