// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Testing

struct AdminOnly: Command {
    static let method = "io.appd.Test.AdminOnly"
    static let requirements: [Requirement] = [.admin]
    typealias Reply = Empty
}

@Suite struct AdminGateTests {
    func bus(_ gate: AdminGate) throws -> EventBus {
        let bus = EventBus(gates: [gate])
        try bus.register(AdminOnly.self) { _, _ in Empty() }
        return bus
    }

    @Test func theDaemonsUIDAndRootAreAdmins() async throws {
        let audit = InMemoryLogHandler()
        let bus = try bus(AdminGate(daemonUID: 1000, audit: Logger(label: "audit", handler: audit)))
        _ = try await bus.send(AdminOnly(), as: Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 1)))
        _ = try await bus.send(AdminOnly(), as: Caller(peer: PeerCredentials(uid: 0, gid: 0, pid: 1)))
        _ = try await bus.send(AdminOnly())  // the daemon itself
        #expect(audit.records.filter { $0.metadata["outcome"] == "ok" }.count == 3)
    }

    /// Security review 2, finding 9: a console session carries the admin group as its gid from
    /// when its link was made, and kept its rights for 12 h after the operator left the group.
    /// Membership is now read from the user database at each call: nobody (primary group
    /// nogroup, 65534) is in it; uid 4242, with no account at all, is not, whatever gid it carries.
    @Test(.enabled(if: AdminGate.user(65534, isIn: 65534), "needs Debian's nobody:nogroup"))
    func aConsoleSessionIsAnAdminOnlyWhileItsOperatorIsInTheGroup() async throws {
        let gate = AdminGate(daemonUID: 1000, adminGroup: 65534)
        #expect(gate.isPrivileged(Caller(peer: PeerCredentials(uid: 65534, gid: 65534, pid: 0), console: "c1")))
        #expect(!gate.isPrivileged(Caller(peer: PeerCredentials(uid: 4242, gid: 65534, pid: 0), console: "c2")), "left the group (or never was)")
        #expect(!AdminGate.user(4242, isIn: 65534))
        let bus = try bus(gate)
        await #expect(throws: PermissionDenied.self) {
            _ = try await bus.send(AdminOnly(), as: Caller(peer: PeerCredentials(uid: 4242, gid: 65534, pid: 0), console: "c2"))
        }
    }

    @Test func otherUsersAndPluginsAreDeniedAndAudited() async throws {
        let audit = InMemoryLogHandler()
        let bus = try bus(AdminGate(daemonUID: 1000, audit: Logger(label: "audit", handler: audit)))
        await #expect(throws: PermissionDenied.self) {
            try await bus.send(AdminOnly(), as: Caller(peer: PeerCredentials(uid: 1001, gid: 1001, pid: 1)))
        }
        await #expect(throws: PermissionDenied.self) { try await bus.send(AdminOnly(), as: .plugin("mailer")) }
        let denied = audit.records.filter { $0.metadata["outcome"] == "denied" }
        #expect(denied.map { $0.metadata["peer.uid"] } == ["1001", "plugin:mailer"])
        #expect(denied.allSatisfy { $0.metadata["method"] == AdminOnly.method })
    }

    /// Hardening finding 7: a plugin's connection runs as appd's uid; its audit lines name it.
    @Test func aPluginsAdminCallIsAuditedUnderItsName() async throws {
        let audit = InMemoryLogHandler()
        let bus = try bus(AdminGate(daemonUID: 1000, audit: Logger(label: "audit", handler: audit)))
        _ = try await bus.send(AdminOnly(), as: Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 7), plugin: "mailer"))
        let line = try #require(audit.records.first { $0.metadata["outcome"] == "ok" })
        #expect(line.metadata["plugin"] == "mailer" && line.metadata["peer.uid"] == "1000")
    }

    @Test func theAdminGroupsPrimaryGIDIsAdmin() async throws {
        let bus = try bus(AdminGate(daemonUID: 1000, adminGroup: 4242, audit: Logger(label: "audit", handler: InMemoryLogHandler())))
        _ = try await bus.send(AdminOnly(), as: Caller(peer: PeerCredentials(uid: 2000, gid: 4242, pid: 1)))
        await #expect(throws: PermissionDenied.self) {
            try await bus.send(AdminOnly(), as: Caller(peer: PeerCredentials(uid: 2000, gid: 2000, pid: 1)))
        }
    }

    @Test func nonAdminCommandsPassUntouched() async throws {
        let bus = EventBus(gates: [AdminGate(daemonUID: 1000)])
        try bus.register(Echo.self) { c, _ in EchoReply(text: c.text) }
        #expect(try await bus.send(Echo(text: "x"), as: Caller(peer: PeerCredentials(uid: 5, gid: 5, pid: 1))).text == "x")
    }
}
