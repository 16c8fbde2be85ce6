// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Glibc
import Testing
import TestSupport

/// Malformed and hostile input against the real socket: each gets a typed error or a close,
/// and the daemon keeps serving everyone else.
@Suite(.serialized, .timeLimit(.minutes(2))) struct HostileClientTests {
    static func expectClosed(_ client: TestClient, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            let reply = try await client.receive()
            Issue.record("expected the server to close, got \(reply)", sourceLocation: sourceLocation)
        } catch {
            #expect(error as? VarlinkClientError == .closed, sourceLocation: sourceLocation)
        }
    }

    static func expectHealthy(_ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let reply = try await server.client().call("io.appd.Test.Echo", ["text": "alive"])
        #expect(reply.parameters == ["text": "alive"], sourceLocation: sourceLocation)
    }

    static let malformed: [(String, [UInt8])] = {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let badUTF8: [UInt8] = [0x7B, 0x22, 0x6D, 0x65, 0x74, 0x68, 0x6F, 0x64, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D, 0x00]
        var cases: [(String, [UInt8])] = []
        cases.append(("invalid JSON", Array("{nope\0".utf8)))
        cases.append(("not an object", Array("[1,2]\0".utf8)))
        cases.append(("missing method", Array("{\"parameters\":{}}\0".utf8)))
        cases.append(("method not a string", Array("{\"method\":5}\0".utf8)))
        cases.append(("empty record", [0]))
        // Hardening finding 12: which 'method' wins must never be a question.
        cases.append(("a member name twice", Array("{\"method\":\"io.appd.Test.Echo\",\"method\":\"io.appd.Test.Touch\",\"parameters\":{\"text\":\"x\"}}\0".utf8)))
        cases.append(("invalid UTF-8", badUTF8))
        cases.append(("deep nesting", Array(("{\"method\":\"io.appd.Test.Echo\",\"parameters\":{\"text\":" + deep + "}}\0").utf8)))
        return cases
    }()

    @Test(arguments: malformed)
    func malformedMessagesCloseTheConnection(name: String, bytes: [UInt8]) async throws {
        let server = try TestServer()
        let client = try server.client()
        try await client.write(bytes)
        await Self.expectClosed(client)
        try await Self.expectHealthy(server)
        await server.stop()
    }

    @Test func callsBeforeAMalformedMessageAreStillAnswered() async throws {
        let server = try TestServer()
        let client = try server.client()
        try await client.write(VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "first"]).frame() + Array("garbage\0".utf8))
        #expect(try await client.receive().parameters == ["text": "first"])
        await Self.expectClosed(client)
        await server.stop()
    }

    @Test func onewayWithMoreClosesTheConnection() async throws {
        let server = try TestServer()
        let client = try server.client()
        // A oneway call gets no reply, so the contradiction can only be answered by a close.
        try client.send(VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "x"], more: true, oneway: true))
        await Self.expectClosed(client)
        try await Self.expectHealthy(server)
        await server.stop()
    }

    @Test func oversizedMessagesAreRefused() async throws {
        var limits = ServerLimits()
        limits.maxMessageBytes = 4096
        let server = try TestServer(limits: limits)
        let client = try server.client()
        // No NUL anywhere: the server gives up once the frame passes the limit.
        try await client.write([UInt8](repeating: 0x20, count: 5000))
        await Self.expectClosed(client)
        try await Self.expectHealthy(server)
        await server.stop()
    }

    @Test func halfARecordThenEOFClosesQuietly() async throws {
        let server = try TestServer()
        let client = try server.client()
        try await client.write(Array("{\"method\":\"io.appd.Test.Ec".utf8))
        client.finishSending()
        await Self.expectClosed(client)
        try await Self.expectHealthy(server)
        await server.stop()
    }

    @Test func repliesAreDeliveredBeforeAHalfClosedConnectionEnds() async throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send(VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "a"]))
        try client.send(VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "b"]))
        client.finishSending()
        #expect(try await client.receive().parameters == ["text": "a"])
        #expect(try await client.receive().parameters == ["text": "b"])
        await Self.expectClosed(client)
        await server.stop()
    }

    @Test func connectionsPerUIDAreCappedAndFileDescriptorsReleased() async throws {
        var limits = ServerLimits()
        limits.maxConnectionsPerUID = 32
        let server = try TestServer(limits: limits)
        let before = openFileDescriptors()
        // Connected on a thread of their own: a connect waits while the server's backlog is full.
        var clients = try await offPool { try (0..<200).map { _ in try server.client() } }
        // Every client asks; exactly 32 are served, the rest find the connection closed.
        var served = 0
        var refused = 0
        for client in clients {
            do {
                try client.send(VarlinkCall(method: "io.appd.Test.Echo", parameters: ["text": "x"]))
                _ = try await client.receive()
                served += 1
            } catch {
                #expect(error as? VarlinkClientError == .closed)
                refused += 1
            }
        }
        #expect(served == 32)
        #expect(refused == 168)
        clients.removeAll()
        // The server notices the closes and releases every descriptor.
        #expect(await eventually { server.server.stats.connections == 0 })
        try await Self.expectHealthy(server)
        #expect(await eventually { openFileDescriptors() <= before })
        await server.stop()
    }

    /// A server whose streams pause at 8 KiB unread (an eighth of 64 KiB).
    static func smallOutputServer(stalledStreamTimeout: Duration = .seconds(60)) throws -> TestServer {
        var limits = ServerLimits()
        limits.maxMessageBytes = 16 * 1024
        limits.maxPendingOutputBytes = 64 * 1024
        limits.stalledStreamTimeout = stalledStreamTimeout
        return try TestServer(limits: limits)
    }

    @Test func aSlowStreamReaderSlowsItsStreamDownInsteadOfBeingDropped() async throws {
        let server = try Self.smallOutputServer()
        let slow = try server.client()
        // About 1.4 MB of replies, twenty times the pending-output limit; nothing read for a while.
        try slow.send(VarlinkCall(method: "io.appd.Test.Count", parameters: ["upTo": 30_000], more: true))
        try await Task.sleep(for: .milliseconds(400))
        #expect(server.server.stats.connections == 1)
        var expected = 1
        while true {
            let reply = try await slow.receive()
            #expect(reply.error == nil)
            guard reply.parameters["n"] == .int(Int64(expected)) else {
                Issue.record("reply \(expected) was \(reply)")
                break
            }
            if !reply.continues { break }
            expected += 1
        }
        #expect(expected == 30_000)
        try await Self.expectHealthy(server)
        await server.stop()
    }

    @Test func aStreamWhoseClientReadsNothingIsClosedAfterTheStallTimeout() async throws {
        let server = try Self.smallOutputServer(stalledStreamTimeout: .milliseconds(800))
        let before = openFileDescriptors()
        let stuck = try server.client()
        try stuck.send(VarlinkCall(method: "io.appd.Test.Count", parameters: ["upTo": 10_000_000], more: true))
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.server.stats.connections == 1)  // paused, not dropped
        #expect(await eventually { server.server.stats.connections == 0 })
        try await Self.expectHealthy(server)
        #expect(await eventually { openFileDescriptors() <= before + 1 })
        await server.stop()
    }

    @Test func aClientThatNeverReadsIsDroppedAtThePendingOutputLimit() async throws {
        var limits = ServerLimits()
        limits.maxMessageBytes = 64 * 1024
        limits.maxPendingOutputBytes = 256 * 1024
        let server = try TestServer(limits: limits)
        let greedy = try server.client()
        // Ask for far more than the limit and never read.
        var bytes: [UInt8] = []
        for _ in 0..<100 { bytes += VarlinkCall(method: "io.appd.Test.Big", parameters: ["bytes": 60_000]).frame() }
        try await greedy.write(bytes)
        #expect(await eventually { server.server.stats.connections == 0 })
        try await Self.expectHealthy(server)
        await server.stop()
    }

    @Test func aSilentConnectionIsClosedAfterTheFirstMessageTimeout() async throws {
        var limits = ServerLimits()
        limits.firstMessageTimeout = .milliseconds(300)
        let server = try TestServer(limits: limits)
        let silent = try server.client()
        let start = ContinuousClock.now
        await Self.expectClosed(silent)
        #expect(ContinuousClock.now - start < .seconds(5))
        try await Self.expectHealthy(server)
        await server.stop()
    }
}
