// SPDX-License-Identifier: Apache-2.0
import Bus
import PluginKit
import Testing
import TestSupport
@testable import Auth
@testable import Payments

/// The daemon's real gates, whoever contributes them and in whatever order, nest in the designed
/// order (docs/architecture.md): a change to a gate's position fails here.
@Suite(.cleansUp) struct GateOrderTests {
    @Test func theDaemonsGatesNestInTheDesignedOrder() async throws {
        let h = try await PluginHarness.make()
        let plugins = h.plugins.flatMap { $0.gates(database: h.database) }
        let daemon: [any Gate] = [AdminGate(), PluginScopeGate(), AccountLimitsGate(perMinute: 60, burst: 10), IdempotencyGate(database: h.database)]
        for gates in [daemon + plugins, plugins.reversed() + daemon.reversed()] {
            #expect(
                EventBus(gates: gates).chain.names == ["scope", "session", "limits", "admin", "onboarding", "verifiedEmail", "idempotency", "paywall"])
        }
    }

    /// A method's call plan (`CallPlan`) leaves a gate out only when the gate could not apply
    /// to any call of it: for every real gate, over methods with each requirement and callers of
    /// every kind (daemon, peer, signed in, with a token, a plugin's connection, a keyed call to an
    /// idempotent method), a gate that applies to a call is in its method's plan.
    @Test func aMethodsPlanLeavesOutOnlyGatesThatCannotApplyToItsCalls() async throws {
        let h = try await PluginHarness.make()
        let daemon: [any Gate] = [AdminGate(), PluginScopeGate(), AccountLimitsGate(perMinute: 60, burst: 10), IdempotencyGate(database: h.database)]
        let chain = EventBus(gates: daemon + h.plugins.flatMap { $0.gates(database: h.database) }).chain
        let single: [Requirement] = [
            .session, .onboarded, .verifiedEmail, .entitlement("pro"), .meter("ai"), .admin, .capability("files.read"), .idempotent, .socket,
            .clientRateLimited,
        ]
        let methods: [[Requirement]] = [[]] + single.map { [$0] } + [[.session, .onboarded, .idempotent], [.session, .meter("ai"), .verifiedEmail]]
        let principal = Principal(userID: "u_1", onboarded: true, emailVerified: true)
        let callers: [Caller] = [
            .daemon, Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 1)), Caller(sessionToken: SessionToken("t")),
            Caller(principal: principal), Caller(connection: ConnectionContext(id: 1, peer: nil, plugin: PluginScope(plugin: "p", publishes: [], subscribes: [], calls: []))),
            Caller(sessionToken: SessionToken("t"), principal: principal, remoteAddress: "127.0.0.1"),
        ]
        let key = try IdempotencyKey("k-1")
        var checked = 0
        for requirements in methods {
            let plan = chain.plan(for: requirements).names
            for caller in callers {
                let keyed = requirements.contains(.idempotent) ? IdempotentRequest(key: key, parameters: [:]) : nil
                for idempotency in [nil, keyed] {
                    let envelope = Envelope(name: "io.appd.Test.M", requirements: requirements, caller: caller, logger: Logger(label: "test"), idempotency: idempotency)
                    for gate in chain.gates where gate.applies(to: envelope) {
                        #expect(plan.contains(gate.name), "\(gate.name) applies to a call of a method requiring \(requirements) but is not in its plan")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 100)
        // What the plans leave out: the gates that apply by the method's requirements alone.
        #expect(chain.plan(for: []).names == ["scope", "session", "limits"])
        #expect(chain.plan(for: [.session]).names == ["scope", "session", "limits"])
        #expect(chain.plan(for: [.admin]).names == ["scope", "session", "limits", "admin"])
        #expect(chain.plan(for: [.session, .onboarded, .idempotent]).names == ["scope", "session", "limits", "onboarding", "idempotency"])
        #expect(chain.plan(for: [.session, .meter("ai"), .verifiedEmail]).names == ["scope", "session", "limits", "verifiedEmail", "paywall"])
    }
}
