// SPDX-License-Identifier: Apache-2.0
@testable import AppdClient
import BusCore
import Contracts
import Testing

@Suite struct ServerSentEventParserTests {
    let stream = "event: reply\ndata: {\"a\":1}\nid: 7\n\n: a comment keeps the stream alive\n\nevent: reply\r\ndata: one\r\ndata: two\r\n\r\ndata:three\r\r"

    @Test func eventsAreTheSameHoweverTheBytesAreSplit() throws {
        var whole = ServerSentEventParser()
        let expected = try whole.feed(Array(stream.utf8))
        #expect(
            expected == [
                ServerSentEvent(event: "reply", data: "{\"a\":1}", id: "7"), ServerSentEvent(event: "reply", data: "one\ntwo", id: "7"),
                ServerSentEvent(event: "message", data: "three", id: "7"),
            ])
        for size in [1, 2, 3, 5, 8, 13] {
            var parser = ServerSentEventParser()
            var events: [ServerSentEvent] = []
            let bytes = Array(stream.utf8)
            for start in stride(from: 0, to: bytes.count, by: size) { events += try parser.feed(bytes[start..<min(start + size, bytes.count)]) }
            #expect(events == expected, "split every \(size) bytes")
        }
    }

    @Test func anEventWithoutDataIsNotDispatchedAndAnOverlongLineIsRefused() throws {
        var parser = ServerSentEventParser(maxLineBytes: 16)
        #expect(try parser.feed(Array("event: reply\n\n".utf8)) == [])
        #expect(throws: ServerSentEventParser.LineTooLong.self) { _ = try parser.feed(Array(String(repeating: "x", count: 17).utf8)) }
    }
}

@Suite struct RetryPolicyTests {
    @Test func backoffGrowsIsCappedAndHonoursRetryAfter() {
        let policy = RetryPolicy(retries: 5, initialDelay: .milliseconds(100), maxDelay: .seconds(1))
        for attempt in 1...8 {
            let delay = policy.delay(attempt: attempt, retryAfter: nil)
            let cap = min(Duration.milliseconds(100) * (1 << (attempt - 1)), .seconds(1))
            #expect(delay >= cap / 2 && delay <= cap, "attempt \(attempt): \(delay)")
        }
        #expect(policy.delay(attempt: 1, retryAfter: "0") == .zero)
        #expect(policy.delay(attempt: 1, retryAfter: " 30") == .seconds(1))
    }

    @Test func onlyBusyAndUnavailableAnswersAreRetried() {
        #expect(RetryPolicy.isRetryable(status: 503, error: "io.appd.Bus.StorageUnavailable"))
        #expect(RetryPolicy.isRetryable(status: 429, error: nil))
        #expect(RetryPolicy.isRetryable(status: 409, error: "io.appd.Bus.IdempotencyKeyInUse"))
        #expect(!RetryPolicy.isRetryable(status: 409, error: "io.appd.Todos.Conflict"))
        #expect(!RetryPolicy.isRetryable(status: 400, error: "io.appd.Todos.ValidationFailed"))
    }
}

@Suite struct WireErrorsTests {
    @Test func aDeclaredErrorIsItsTypedCaseAndAnyOtherIsNamed() throws {
        let required: JSONValue = ["error": "io.appd.Payments.PaymentRequired", "parameters": ["entitlement": "pro", "remaining": .int(0), "resetsAt": "2026-12-03T00:00:00Z"]]
        #expect(WireErrors.error(status: 402, body: required) as? PaymentsError == .paymentRequired(entitlement: "pro", remaining: 0, resetsAt: "2026-12-03T00:00:00Z"))
        #expect(WireErrors.error(status: 404, body: ["error": "io.appd.Todos.NotFound", "parameters": [:]]) as? TodosError == .notFound)
        let gate: JSONValue = ["error": "io.appd.Bus.TooManyStreams", "parameters": ["limit": .int(4)]]
        #expect(WireErrors.error(status: 429, body: gate) as? AppdClientError == .server(status: 429, name: "io.appd.Bus.TooManyStreams", parameters: ["limit": .int(4)]))
        #expect(WireErrors.error(status: 502, body: nil) as? AppdClientError == .server(status: 502, name: "HTTP 502", parameters: [:]))
    }
}
