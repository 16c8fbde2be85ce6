// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Testing

/// Calls whose handler never waits are answered by the I/O loop where it reads them (no task,
/// no hop to the connection's worker), without ever overtaking a call before them.
@Suite struct AnswerNowTests {
    @Test func aCallThatNeverWaitsIsAnsweredByTheLoopNotAWorkerTask() async throws {
        let server = try TestServer()
        let client = try server.client()
        let before = Metrics.shared.counter("appd_calls_total", labels: ["io.appd.Test.Quick", "ok", "varlink"])
        #expect(try await client.call("io.appd.Test.Quick", ["text": "hi"]).parameters == ["text": "hi", "inTask": false])
        #expect(Metrics.shared.counter("appd_calls_total", labels: ["io.appd.Test.Quick", "ok", "varlink"]) >= before + 1, "counted like any call")
        // Its errors are typed replies, checked parameters included.
        #expect(try await client.call("io.appd.Test.Quick", ["text": "fail"]).error == "io.appd.Test.Failed")
        let bad = try await client.call("io.appd.Test.Quick", ["text": 3])
        #expect(bad.error == "org.varlink.service.InvalidParameter")
        #expect(bad.parameters["parameter"] == "text")
        // Oneway: answered, nothing written; the next reply on the wire is the next call's.
        try client.send(VarlinkCall(method: "io.appd.Test.Quick", parameters: ["text": "quiet"], oneway: true))
        #expect(try await client.call("io.appd.Test.Echo", ["text": "next"]).parameters == ["text": "next"])
        await server.stop()
    }

    @Test func aCallBehindOneBeingAnsweredWaitsItsTurn() async throws {
        let server = try TestServer()
        let client = try server.client()
        // One write: the loop reads all four at once. Quick "a" comes after a call the worker
        // is still answering, so the worker answers it too, in order.
        var bytes: [UInt8] = []
        bytes += VarlinkCall(method: "io.appd.Test.Sleep", parameters: ["seconds": 0.2]).frame()
        bytes += VarlinkCall(method: "io.appd.Test.Quick", parameters: ["text": "a"]).frame()
        bytes += VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "b"]).frame()
        bytes += VarlinkCall(method: "io.appd.Test.Quick", parameters: ["text": "c"]).frame()
        try await client.write(bytes)
        #expect(try await client.receive().parameters == [:])
        #expect(try await client.receive().parameters == ["text": "a", "inTask": true])
        #expect(try await client.receive().parameters == ["text": "b"])
        #expect(try await client.receive().parameters == ["text": "c", "inTask": true])
        // Once the worker is done, the loop answers again.
        #expect(try await client.call("io.appd.Test.Quick", ["text": "d"]).parameters == ["text": "d", "inTask": false])
        await server.stop()
    }

    @Test func tenThousandPipelinedCallsOfBothKindsAnswerInOrder() async throws {
        let server = try TestServer()
        let client = try server.client()
        // Runs of each kind, so the loop and the worker take turns many times. Written 500 at a
        // time (each write fits the socket's buffer): a write that blocked until the server
        // drained it would hold one of the few cooperative threads the other suites need.
        let quick = { (i: Int) in (i / 3) % 2 == 0 }
        var answeredByLoop = 0
        for chunk in stride(from: 0, to: 10_000, by: 500) {
            var bytes: [UInt8] = []
            for i in chunk..<chunk + 500 {
                let method = quick(i) ? "io.appd.Test.Quick" : "io.appd.Test.Echo"
                bytes += VarlinkCall(method: method, parameters: ["text": .string(String(i))]).frame()
            }
            try await client.write(bytes)
            for i in chunk..<chunk + 500 {
                let reply = try await client.receive()
                #expect(reply.parameters["text"] == .string(String(i)))
                if reply.parameters["text"] != .string(String(i)) { return await server.stop() }
                if reply.parameters["inTask"] == false { answeredByLoop += 1 }
            }
        }
        #expect(answeredByLoop > 0, "the loop answered some itself")
        await server.stop()
    }
}
