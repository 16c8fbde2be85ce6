import Testing

@testable import Bus
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
}
