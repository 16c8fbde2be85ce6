// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Synchronization
import Testing
import TestSupport

/// A plain call runs in its connection's worker under a deadline the server keeps
/// (`KeptDeadline`), not in a race task: at the deadline the loop answers it, and a new worker
/// takes the calls after it while the old one ends with the call.
@Suite struct VarlinkDeadlineTests {
    @Test func aCallPastItsDeadlineIsAnsweredAtOnceAndTheCallsAfterItByANewWorker() async throws {
        var limits = ServerLimits()
        limits.callTimeout = .milliseconds(200)
        let server = try TestServer(limits: limits)
        let client = try server.client()
        // Pipelined: a call that ignores cancellation until the test lets it go, then one that
        // answers at once.
        try client.send(VarlinkCall(method: "io.appd.Test.Stuck", parameters: [:]))
        try client.send(VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "after"]))
        let first = try await client.receive()
        let second = try await client.receive()
        let stuckEnded = server.stuck.seen.withLock { $0 != nil }
        #expect(first.error == "io.appd.Bus.DeadlineExceeded")
        #expect(first.parameters == ["method": "io.appd.Test.Stuck"])
        #expect(second.error == nil && second.parameters == ["text": "after"])
        #expect(!stuckEnded, "both were answered while the stuck call still waited")
        #expect(server.server.abandonedWorkers.load(ordering: .relaxed) == 1)
        // Let go, the stuck call ends cancelled, its commit refused, and its reply is never
        // sent: the next reply on the wire is the next call's.
        server.stuck.release.open()
        #expect(await eventually { server.stuck.seen.withLock { $0 != nil } })
        let seen = server.stuck.seen.withLock { $0 }
        #expect(seen?.cancelled == true)
        #expect(seen?.claimed == false, "a write after the deadline is refused its commit")
        #expect(try await client.call("io.appd.Test.Echo", ["text": "last"]).parameters == ["text": "last"])
        await server.stop()
    }

    @Test func aCallThatEndsInTimeIsAnsweredByItsWorkerAndItsDeadlineClaimHolds() async throws {
        var limits = ServerLimits()
        limits.callTimeout = .seconds(5)
        let server = try TestServer(limits: limits)
        let client = try server.client()
        server.stuck.release.open()
        let reply = try await client.call("io.appd.Test.Stuck", [:])
        #expect(reply.error == nil && reply.parameters == ["claimed": true])
        #expect(server.stuck.seen.withLock { $0?.cancelled } == false)
        #expect(server.server.abandonedWorkers.load(ordering: .relaxed) == 0)
        await server.stop()
    }
}
