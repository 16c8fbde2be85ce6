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
}
