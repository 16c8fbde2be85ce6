// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Glibc
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(2))) struct VarlinkServerTests {
    @Test func getInfoHasAllFiveFieldsAndDescriptionsParse() async throws {
        let server = try TestServer()
        let client = try server.client()
        let info = try await client.call("org.varlink.service.GetInfo")
        #expect(info.error == nil)
        for key in ["vendor", "product", "version", "url", "interfaces"] { #expect(info.parameters[key] != nil, "\(key)") }
        #expect(info.parameters["interfaces"] == ["io.appd.Bus", "io.appd.Test", "org.varlink.service"])
        for name in ["io.appd.Bus", "io.appd.Test", "org.varlink.service"] {
            let reply = try await client.call("org.varlink.service.GetInterfaceDescription", ["interface": .string(name)])
            let text = try #require(reply.parameters["description"]?.stringValue)
            #expect(try VarlinkInterface(parsing: text).name == name)
        }
        let missing = try await client.call("org.varlink.service.GetInterfaceDescription", ["interface": "no.such"])
        #expect(missing.error == "org.varlink.service.InterfaceNotFound")
        await server.stop()
    }

    @Test func callsErrorsAndUnknownNames() async throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try await client.call("io.appd.Test.Echo", ["text": "hi"]) == VarlinkReply(parameters: ["text": "hi"]))
        #expect(try await client.call("io.appd.Test.Fail") == VarlinkReply(parameters: ["reason": "on purpose"], error: "io.appd.Test.Failed"))
        #expect(try await client.call("io.appd.Test.Echo", ["text": 1]) == VarlinkReply(parameters: ["parameter": "text"], error: "org.varlink.service.InvalidParameter"))
        #expect(try await client.call("io.appd.Test.Echo", ["text": "a", "x": 1]).parameters == ["parameter": "x"])
        #expect(try await client.call("io.appd.Test.Echo").parameters == ["parameter": "text"])
        #expect(try await client.call("io.appd.Test.Nope").error == "org.varlink.service.MethodNotFound")
        #expect(try await client.call("io.appd.Nope.Echo") == VarlinkReply(parameters: ["interface": "io.appd.Nope"], error: "org.varlink.service.InterfaceNotFound"))
        #expect(try await client.call("nodot").error == "org.varlink.service.InterfaceNotFound")
        #expect(try await client.call("io.appd.Test.Count", ["upTo": 2]).error == "org.varlink.service.ExpectedMore")
        await server.stop()
    }

    @Test func streamsContinueUntilTheLastReply() async throws {
        let server = try TestServer()
        let client = try server.client()
        var replies: [VarlinkReply] = []
        try await client.stream("io.appd.Test.Count", ["upTo": 3]) { replies.append($0) }
        #expect(
            replies == [
                VarlinkReply(parameters: ["n": 1], continues: true), VarlinkReply(parameters: ["n": 2], continues: true),
                VarlinkReply(parameters: ["n": 3]),
            ])
        // `more` on a single-reply method: one reply without `continues`.
        var single: [VarlinkReply] = []
        try await client.stream("io.appd.Test.Echo", ["text": "x"]) { single.append($0) }
        #expect(single == [VarlinkReply(parameters: ["text": "x"])])
        await server.stop()
    }

    /// A stream after a call that waited is answered by a fresh worker (the old one holds the
    /// memory of that call's depth): the calls queued behind the stream stay in order, and a
    /// stream as a connection's first call keeps its worker.
    @Test func aStreamAfterACallGetsAFreshWorkerAndTheQueueKeepsItsOrder() async throws {
        var limits = ServerLimits()
        limits.idleWorkerRetirement = .seconds(3600)  // the worker counts below are not retirement's
        let server = try TestServer(limits: limits)
        let first = try server.client()
        try await first.stream("io.appd.Test.Count", ["upTo": 2]) { _ in }
        #expect(server.server.handOvers.load(ordering: .relaxed) == 0)

        let client = try server.client()
        var bytes: [UInt8] = []
        for call in [
            VarlinkCall(method: "io.appd.Test.Sleep", parameters: ["seconds": 0.01]),
            VarlinkCall(method: "io.appd.Test.Count", parameters: ["upTo": 3], more: true),
            VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "a"]),
            VarlinkCall(method: "io.appd.Test.Sleep", parameters: ["seconds": 0.01]),
            VarlinkCall(method: "io.appd.Test.Count", parameters: ["upTo": 2], more: true),
            VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "b"]),
        ] { bytes += call.frame() }
        try await client.write(bytes)
        var replies: [VarlinkReply] = []
        for _ in 0..<9 { replies.append(try await client.receive()) }
        #expect(
            replies == [
                VarlinkReply(parameters: [:]),
                VarlinkReply(parameters: ["n": 1], continues: true), VarlinkReply(parameters: ["n": 2], continues: true), VarlinkReply(parameters: ["n": 3]),
                VarlinkReply(parameters: ["text": "a"]),
                VarlinkReply(parameters: [:]),
                VarlinkReply(parameters: ["n": 1], continues: true), VarlinkReply(parameters: ["n": 2]),
                VarlinkReply(parameters: ["text": "b"]),
            ])
        #expect(server.server.handOvers.load(ordering: .relaxed) == 2)

        // A stream open on a handed-over worker: the client going away frees the connection
        // and its worker.
        do {
            let closing = try server.client()
            _ = try await closing.call("io.appd.Test.Sleep", ["seconds": 0.01])
            try closing.send(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": ["test.*"]], more: true))
            #expect(await eventually { server.bus.counters.subscriptions == 1 })
            #expect(server.server.handOvers.load(ordering: .relaxed) == 3)
            #expect(server.server.registry.withLock { $0.workers.count } == 3)
        }  // closed here
        #expect(await eventually { server.bus.counters.subscriptions == 0 })
        #expect(await eventually { server.server.registry.withLock { $0.workers.count } == 2 })  // `first`'s and `client`'s
        // And one open at shutdown does not hold the server up.
        let open = try server.client()
        _ = try await open.call("io.appd.Test.Sleep", ["seconds": 0.01])
        try open.send(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": ["test.*"]], more: true))
        #expect(await eventually { server.bus.counters.subscriptions == 1 })
        await server.stop()
        #expect(server.server.registry.withLock { $0.workers.isEmpty && $0.connections.isEmpty })
    }

    /// A connection gets a worker with its first call the loop does not answer itself; a worker
    /// that waited `idleWorkerRetirement` ends (its task held that call's depth); the next call
    /// starts a new one, and every call is still answered in order.
    @Test func aWorkerStartsWithTheFirstCallThatNeedsOneAndEndsWhenIdle() async throws {
        var limits = ServerLimits()
        limits.idleWorkerRetirement = .milliseconds(200)
        let server = try TestServer(limits: limits)
        let workers = { server.server.registry.withLock { $0.workers.count } }
        let retired = { server.server.retiredWorkers.load(ordering: .relaxed) }
        // Answered by the loop: no worker.
        let quick = try server.client()
        #expect(try await quick.call("io.appd.Test.Quick", ["text": "inline"]).parameters["text"] == "inline")
        #expect(workers() == 0)
        let client = try server.client()
        _ = try await client.call("io.appd.Test.Sleep", ["seconds": 0.01])
        // A worker answered it: still waiting, or (a loaded machine read the reply late) retired.
        #expect(workers() + retired() == 1)
        #expect(await eventually { retired() == 1 && workers() == 0 })

        // Calls after the retirement: a new worker answers them, in order (a quick one that
        // the loop answers, then ones that wait, pipelined).
        var bytes: [UInt8] = []
        for call in [
            VarlinkCall(method: "io.appd.Test.Quick", parameters: ["text": "a"]),
            VarlinkCall(method: "io.appd.Test.Sleep", parameters: ["seconds": 0.01]),
            VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "b"]),
            VarlinkCall(method: "io.appd.Test.Count", parameters: ["upTo": 2], more: true),
            VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "c"]),
        ] { bytes += call.frame() }
        try await client.write(bytes)
        var replies: [VarlinkReply] = []
        for _ in 0..<6 { replies.append(try await client.receive()) }
        #expect(replies.map { $0.parameters["text"] ?? $0.parameters["n"] ?? .null } == ["a", .null, "b", 1, 2, "c"])
        #expect(workers() + retired() == 2, "a second worker answered them (still waiting, or retired already)")
        #expect(await eventually { retired() == 2 && workers() == 0 })

        // With no worker, the client going away still closes and frees the connection.
        client.finishSending()
        #expect(await eventually { server.server.stats.connections == 1 })
        quick.finishSending()
        #expect(await eventually { server.server.stats.connections == 0 })
        await server.stop()
        #expect(server.server.registry.withLock { $0.workers.isEmpty && $0.connections.isEmpty })
    }

    @Test func aWorkerRetirementOfZeroIsRefused() {
        var limits = ServerLimits()
        limits.idleWorkerRetirement = .zero
        #expect(throws: InvalidLimit(name: "idleWorkerRetirement", reason: "must be more than 0")) { try limits.validated() }
    }

    @Test func onewayGetsNoReplyNotEvenAnError() async throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send(VarlinkCall(method: "io.appd.Test.Touch", oneway: true))
        try client.send(VarlinkCall(method: "io.appd.Test.Fail", oneway: true))
        try client.send(VarlinkCall(method: "io.appd.Test.Nope", oneway: true))
        // The next reply on the wire belongs to the next call, and Touch ran once before it.
        #expect(try await client.call("io.appd.Test.Touch").parameters == ["touches": 2])
        await server.stop()
    }

    @Test func tenThousandPipelinedCallsAnswerInOrder() async throws {
        let server = try TestServer()
        let client = try server.client()
        var bytes: [UInt8] = []
        for i in 0..<10_000 { bytes += VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": .string(String(i))]).frame() }
        // The server pauses reading at its queue limit while it answers: the write completes.
        try await client.write(bytes)
        for i in 0..<10_000 {
            let reply = try await client.receive()
            #expect(reply.parameters == ["text": .string(String(i))])
            if reply.parameters != ["text": .string(String(i))] { break }
        }
        await server.stop()
    }

    @Test func theCallTimeoutGivesATypedError() async throws {
        var limits = ServerLimits()
        limits.callTimeout = .milliseconds(200)
        let server = try TestServer(limits: limits)
        let client = try server.client()
        let start = ContinuousClock.now
        let reply = try await client.call("io.appd.Test.Sleep", ["seconds": 5])
        #expect(reply.error == "io.appd.Bus.DeadlineExceeded")
        #expect(ContinuousClock.now - start < .seconds(3))
        #expect(try await client.call("io.appd.Test.Echo", ["text": "still here"]).parameters == ["text": "still here"])
        await server.stop()
    }

    @Test func theSocketIsOwnerOnlyAndRemovedOnStop() async throws {
        let server = try TestServer()
        var info = stat()
        #expect(lstat(server.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        await server.stop()
        #expect(lstat(server.path, &info) != 0)
    }

    @Test func aLiveSocketIsNeverStolenAndAStaleOneIsReplaced() async throws {
        let server = try TestServer()
        #expect(throws: SocketError.self) { try ListeningSocket.bind(path: server.path, mode: 0o600) }
        #expect(try await server.client().call("io.appd.Test.Echo", ["text": "ok"]).error == nil)
        await server.stop()

        // A socket file nobody listens on (a daemon that died) is replaced.
        // (In a private directory of its own: appd refuses socket directories others can write.)
        let staleDirectory = server.directory + "-stale"
        mkdir(staleDirectory, 0o700)
        defer { rmdir(staleDirectory) }
        let stalePath = staleDirectory + "/stale.sock"
        defer { unlink(stalePath) }
        let fd = appd_listen_then_close(stalePath)
        #expect(fd)
        let replacement = try ListeningSocket.bind(path: stalePath, mode: 0o600)
        replacement.close()
    }

    @Test func eventsFlowToSubscribersOverTheSocket() async throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": ["todos.*"]], more: true))
        // The subscription is live once the daemon has processed the call: wait for it.
        #expect(await eventually { server.bus.counters.subscriptions == 1 })
        server.bus.publish(TodoCreated(id: 1), causedBy: nil)
        server.bus.publish(UserSignedUp(email: "x@y.z"), causedBy: nil)
        try server.bus.publish(topic: "todos.completed", payload: ["id": 2], causedBy: nil)
        let first = try await client.receive()
        #expect(first.continues)
        #expect(first.parameters["topic"] == "todos.created")
        #expect(first.parameters["payload"] == ["id": 1])
        #expect(first.parameters["dropped"] == 0)
        let second = try await client.receive()
        #expect(second.parameters["topic"] == "todos.completed")
        let other = try server.client()
        #expect(try await other.call("io.appd.Bus.Subscribe", ["topics": ["bad..topic"]]).error == "org.varlink.service.ExpectedMore")
        var replies: [VarlinkReply] = []
        try await other.stream("io.appd.Bus.Subscribe", ["topics": ["bad..topic"]]) { replies.append($0) }
        #expect(replies.first?.error == "io.appd.Bus.InvalidTopic")
        await server.stop()
    }

    /// A publisher writes an event straight to a caught-up subscriber's connection; one that
    /// has fallen behind (its buffer over the high-water mark) gets the rest through its queue,
    /// in order and without a loss, and the direct path takes over again once it has caught up.
    @Test func fanOutWritesStraightToTheSocketAndFallsBackInOrderWhenTheClientLags() async throws {
        var limits = ServerLimits()
        limits.maxMessageBytes = 64 << 10
        limits.maxPendingOutputBytes = 64 << 10  // high-water mark 8 KiB
        let server = try TestServer(limits: limits)
        let client = try server.client()
        try client.send(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": ["bench.*"]], more: true))
        #expect(await eventually { server.bus.counters.subscriptions == 1 })
        let direct = { server.bus.registry.withLock { $0.subscriptions.queues.values.map(\.directCount).reduce(0, +) } }
        // 1,000 events of ~2 KB while the client reads nothing: the kernel's buffer and the
        // high-water mark take the first ones, the queue (capacity 1,024) the rest.
        let pad = JSONValue.string(String(repeating: "x", count: 2000))
        for n in 0..<1000 { try server.bus.publish(topic: "bench.tick", payload: ["n": .int(Int64(n)), "pad": pad], causedBy: nil) }
        let firstDirect = direct()
        #expect(firstDirect > 0)
        #expect(firstDirect < 1000)
        for n in 0..<1000 {
            let reply = try await client.receive()
            #expect(reply.continues && reply.error == nil)
            #expect(reply.parameters["payload"]?["n"] == .int(Int64(n)), "event \(n) out of order")
            #expect(reply.parameters["dropped"] == 0)
        }
        // Caught up: the next events go straight to the socket again.
        #expect(
            await eventually {
                try? server.bus.publish(topic: "bench.tock", payload: ["n": 1000], causedBy: nil)
                return direct() > firstDirect
            })
        let next = try await client.receive()
        #expect(next.parameters["topic"] == "bench.tock")
        await server.stop()
    }

    /// Publishing while the subscriber reads, so the direct path and the queue take turns
    /// many times: every event arrives in order, and a gap is exactly the drops reported.
    @Test func fanOutKeepsOrderWhileTheDirectPathAndTheQueueTakeTurns() async throws {
        var limits = ServerLimits()
        limits.maxMessageBytes = 64 << 10
        limits.maxPendingOutputBytes = 64 << 10
        let server = try TestServer(limits: limits)
        let client = try server.client()
        try client.send(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": ["bench.*"]], more: true))
        #expect(await eventually { server.bus.counters.subscriptions == 1 })
        let bus = server.bus
        let count = 5000
        let publisher = Task.detached {
            let pad = JSONValue.string(String(repeating: "y", count: 1500))
            for n in 0..<count {
                try bus.publish(topic: "bench.tick", payload: ["n": .int(Int64(n)), "pad": pad], causedBy: nil)
                if n % 64 == 0 { await Task.yield() }
            }
        }
        var last: Int64 = -1
        var received = 0
        while last < Int64(count - 1) {
            let reply = try await client.receive()
            guard case .int(let n)? = reply.parameters["payload"]?["n"], case .int(let dropped)? = reply.parameters["dropped"] else {
                Issue.record("not an event: \(reply)")
                break
            }
            #expect(n == last + 1 + dropped, "event \(n) after \(last) with \(dropped) dropped")
            last = n
            received += 1
        }
        try await publisher.value
        #expect(received > 0)
        await server.stop()
    }
}
