// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink

/// The wire form of an event is shared by its subscribers, but never across the forms one event
/// id takes: live without a sequence, logged with one, redacted after its owner was deleted.
@Suite struct EncodedEventsTests {
    @Test func oneEventIdInItsDifferentFormsIsEncodedForEach() throws {
        let encoded = EncodedEvents()
        let live = BusEvent(topic: "demo.a", payload: .json(.object(["secret": .string("s3")])))
        let first = encoded.json(live)
        #expect(first == encoded.json(live))
        #expect(first["payload"] == .object(["secret": .string("s3")]) && first["seq"] == nil)
        let logged = live.logged(at: 7)
        #expect(encoded.json(logged)["seq"] == .int(7))
        let redacted = BusEvent(
            stored: live.id, correlationID: live.correlationID, causationID: nil, topic: "demo.a", version: 1, owner: nil, sequence: 7,
            timestamp: live.timestamp, payload: .object([:]), redacted: true)
        let tombstone = encoded.json(redacted)
        #expect(tombstone["redacted"] == .bool(true) && tombstone["payload"] != first["payload"], "\(tombstone)")
        // And the live form is still what it was.
        #expect(encoded.json(live) == first)
    }

    private struct Noted: Event {
        static let topic = "demo.noted"
        static let audience = EventAudience.admin
        var text: String
        var count: Int
        var ratio: Double
        var tags: [String?]
    }

    /// The wire bytes splice the payload's text in as the log encoded it; they are exactly the
    /// JSON of the wire form, in every shape an event takes.
    @Test func theWireBytesAreTheWireFormsJSON() throws {
        let cause = BusEvent(topic: "demo.cause", payload: .json(.object([:])))
        let typed = BusEvent(Noted(text: "é \"q\"\n", count: -3, ratio: 0.25, tags: ["a", nil]), causedBy: cause)
        var dropped = typed
        dropped.droppedBefore = 4
        let logged = typed.logged(at: 12, payload: try typed.jsonBytes())
        let redacted = BusEvent(
            stored: typed.id, correlationID: typed.correlationID, causationID: nil, topic: Noted.topic, version: 2, owner: "u1", sequence: 9,
            timestamp: typed.timestamp, payload: .object([:]), redacted: true)
        let plain = BusEvent(topic: "demo.a", payload: .json(.object(["n": .int(1), "list": .array([.bool(true), .null])])))
        for event in [typed, dropped, logged, redacted, plain] {
            #expect(EncodedEvents.bytes(event) == JSONWriter.bytes(EncodedEvents.encode(event)), "\(event.topic) \(event.sequence ?? -1)")
        }
        // The logged form carries the log's text, and its JSON is what a replay would parse.
        #expect(try logged.json() == JSONValue(encoding: Noted(text: "é \"q\"\n", count: -3, ratio: 0.25, tags: ["a", nil])))
        #expect(EncodedEvents.encode(logged)["seq"] == .int(12) && EncodedEvents.encode(typed)["causationId"] == .string(cause.id.description))
    }
}
