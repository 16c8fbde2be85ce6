// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Testing
import TestSupport

@Suite struct CommandTests {
    @Test func typedCallReachesTheOneHandler() async throws {
        let bus = EventBus()
        try bus.register(Echo.self) { command, _ in EchoReply(text: command.text.uppercased()) }
        let reply = try await bus.send(Echo(text: "hi"))
        #expect(reply == EchoReply(text: "HI"))
    }

    @Test func aSecondHandlerIsRejected() throws {
        let bus = EventBus()
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        #expect(throws: DuplicateHandler.self) {
            try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        }
    }

    @Test func noHandlerFailsAtOnceAndIsNotADeadline() async throws {
        let bus = EventBus(options: .init(defaultTimeout: .seconds(30)))
        let start = ContinuousClock.now
        await #expect(throws: NoHandler(method: Echo.method)) { try await bus.send(Echo(text: "x")) }
        await #expect(throws: NoHandler(method: "io.appd.Nope.Nothing")) {
            try await bus.call(method: "io.appd.Nope.Nothing", parameters: [:])
        }
        // Far below the 30 s deadline: it did not wait for it.
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func aSlowHandlerHitsTheDeadlineAndIsCancelled() async throws {
        let bus = EventBus()
        let cancelled = Flag()
        try bus.register(Sleepy.self) { command, _ in
            do {
                try await Task.sleep(for: .seconds(command.seconds))
            } catch {
                cancelled.set()
                throw error
            }
            return Empty()
        }
        await #expect(throws: DeadlineExceeded(method: Sleepy.method)) {
            try await bus.send(Sleepy(seconds: 10), timeout: .milliseconds(50))
        }
        #expect(await eventually { cancelled.isSet })
    }

    @Test func cancellingTheCallerCancelsTheHandler() async throws {
        let bus = EventBus()
        let started = Flag()
        let cancelled = Flag()
        try bus.register(Sleepy.self) { command, _ in
            started.set()
            do {
                try await Task.sleep(for: .seconds(command.seconds))
            } catch {
                cancelled.set()
                throw error
            }
            return Empty()
        }
        for timeout in [nil, Duration.seconds(30)] {
            let caller = Task { try await bus.send(Sleepy(seconds: 30), timeout: timeout) }
            #expect(await eventually { started.isSet })
            caller.cancel()
            await #expect(throws: CancellationError.self) { try await caller.value }
            #expect(await eventually { cancelled.isSet })
        }
    }

    @Test func jsonDispatchUsesTheTypedHandler() async throws {
        let bus = EventBus()
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text + "!") }
        let reply = try await bus.call(method: Echo.method, parameters: ["text": "json"])
        #expect(reply == ["text": "json!"])
    }

    @Test func jsonDispatchNamesTheBadField() async throws {
        let bus = EventBus()
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        do {
            _ = try await bus.call(method: Echo.method, parameters: ["text": 5])
            Issue.record("expected InvalidParameters")
        } catch let error as InvalidParameters {
            #expect(error.parameter == "text")
            #expect(error.wireName == "org.varlink.service.InvalidParameter")
        }
        do {
            _ = try await bus.call(method: Echo.method, parameters: .null)
            Issue.record("expected InvalidParameters")
        } catch let error as InvalidParameters {
            #expect(error.parameter == "text")
            #expect(error.reason == "missing")
        }
    }

    @Test func typedCallsReachRawHandlers() async throws {
        let bus = EventBus()
        try bus.registerRaw(method: Echo.method, requirements: []) { _, parameters in
            ["text": .string((parameters["text"]?.stringValue ?? "") + " raw")]
        }
        #expect(try await bus.send(Echo(text: "typed")).text == "typed raw")
    }

    @Test func envelopeCarriesCallerIdsAndCausation() async throws {
        let bus = EventBus()
        try bus.register(Echo.self) { _, envelope in
            EchoReply(text: "\(envelope.caller.peer?.uid ?? 0)", user: envelope.causationID?.description)
        }
        let cause = Envelope(name: "cause", requirements: [], caller: .daemon, logger: Logger(label: "t"))
        let caller = Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 42))
        let reply = try await bus.send(Echo(text: ""), as: caller, causedBy: cause)
        #expect(reply == EchoReply(text: "1000", user: cause.id.description))
    }

    @Test func streamingRepliesArriveInOrderAndEnd() async throws {
        let bus = EventBus()
        try bus.register(Count.self) { command, _, writer in
            for i in 1..<command.upTo { try await writer.send(i) }
            return command.upTo
        }
        var seen: [Int] = []
        for try await n in try await bus.stream(Count(upTo: 200)) { seen.append(n) }
        #expect(seen == Array(1...200))

        var json: [JSONValue] = []
        let stream = try await bus.callStream(method: Count.method, parameters: ["upTo": 3])
        while let (value, isFinal) = try await stream.nextReply() { json.append([value, .bool(isFinal)]) }
        #expect(json == [[1, false], [2, false], [3, true]])
    }

    @Test func anErrorEndsTheStream() async throws {
        let bus = EventBus()
        try bus.register(Count.self) { command, _, writer in
            try await writer.send(1)
            throw Denied(reason: "broken")
        }
        var seen: [Int] = []
        await #expect(throws: Denied(reason: "broken")) {
            for try await n in try await bus.stream(Count(upTo: 5)) { seen.append(n) }
        }
        #expect(seen == [1])
    }

    @Test func cancellingTheConsumerCancelsTheProducer() async throws {
        let bus = EventBus(options: .init(streamCapacity: 4))
        let cancelled = Flag()
        try bus.register(Count.self) { _, _, writer in
            var i = 0
            do {
                while true {
                    i += 1
                    try await writer.send(i)
                }
            } catch {
                cancelled.set()
                throw error
            }
        }
        // Consumer task cancelled while it waits.
        let tenth = Flag()
        let consumer = Task {
            var n = 0
            for try await _ in try await bus.stream(Count(upTo: 0)) {
                n += 1
                if n == 10 {
                    tenth.set()
                    try await Task.sleep(for: .seconds(30))
                }
            }
        }
        // Bounds fit for a loaded machine: at the start of a full run, with every suite starting
        // at once on two cores, ten replies once took longer than ten seconds (CI).
        #expect(await eventually(timeout: .seconds(60)) { tenth.isSet })
        consumer.cancel()
        _ = await consumer.result
        #expect(await eventually(timeout: .seconds(60)) { cancelled.isSet })
    }

    @Test func droppingTheStreamCancelsTheProducer() async throws {
        let bus = EventBus(options: .init(streamCapacity: 2))
        let cancelled = Flag()
        try bus.register(Count.self) { _, _, writer in
            do {
                while true { try await writer.send(0) }
            } catch {
                cancelled.set()
                throw error
            }
        }
        do {
            let stream = try await bus.stream(Count(upTo: 0))
            var iterator = stream.makeAsyncIterator()
            _ = try await iterator.next()
        }
        #expect(await eventually { cancelled.isSet })
    }

    @Test func callingAStreamAsASingleCallIsAShapeError() async throws {
        let bus = EventBus()
        try bus.register(Count.self) { _, _, _ in 0 }
        await #expect(throws: WrongCallShape.self) { try await bus.call(method: Count.method, parameters: ["upTo": 1]) }
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        await #expect(throws: WrongCallShape.self) { try await bus.callStream(method: Echo.method, parameters: ["text": ""]) }
    }
}

@Suite struct UnregisterTests {
    @Test func unregisteringAnInterfaceRemovesExactlyItsMethods() async throws {
        let bus = EventBus()
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        try bus.register(Sleepy.self) { _, _ in Empty() }
        try bus.registerRaw(method: "io.appd.TestOther.Echo", requirements: []) { _, p in p }
        bus.unregister(interface: "io.appd.Test")
        #expect(bus.methods == ["io.appd.TestOther.Echo"])
        await #expect(throws: NoHandler(method: Echo.method)) { try await bus.send(Echo(text: "x")) }
    }
}

@Suite struct ReplyStreamMemoryTests {
    @Test func aConsumerThatNeverQuiteCatchesUpDoesNotMakeTheBufferGrow() async throws {
        let bus = EventBus(options: .init(streamCapacity: 8))
        try bus.register(Count.self) { command, _, writer in
            for i in 1..<command.upTo { try await writer.send(i) }
            return command.upTo
        }
        let stream = try await bus.stream(Count(upTo: 20_000))
        var largest = 0, seen = 0
        while let (value, _) = try await stream.nextReply() {
            seen += 1
            #expect(value == seen)
            largest = max(largest, stream.channel.storedCount)
            // Let the producer refill before the next take, so the buffer is never empty.
            await Task.yield()
            await Task.yield()
        }
        #expect(seen == 20_000)
        #expect(largest <= 2 * 64 + 8)
    }
}
