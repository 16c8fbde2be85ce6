// SPDX-License-Identifier: Apache-2.0
/// Where a gate nests in the chain, outermost first (docs/architecture.md). Each gate says where it goes;
/// the bus sorts them (stable: gates at one position keep the order given).
///
/// - scope: an external plugin's connection is held to its manifest before anything else.
/// - session: resolves who the caller is (auth).
/// - limits: counts calls per account, so right after the session resolves it.
/// - admin: admin-only methods.
/// - onboarding, verifiedEmail: the account's standing (auth).
/// - idempotency: a keyed write answered from the store uses no meter, so before the paywall.
/// - paywall: entitlements and meters (payments).
/// - feature: a gate with no designed place (a plugin's own): innermost.
public enum GatePosition: Int, Sendable, Comparable, CaseIterable {
    case scope, session, limits, admin, onboarding, verifiedEmail, idempotency, paywall, feature

    public static func < (a: GatePosition, b: GatePosition) -> Bool { a.rawValue < b.rawValue }

    /// `gates` in chain order, outermost first.
    public static func sorted(_ gates: [any Gate]) -> [any Gate] {
        gates.enumerated().sorted { a, b in (a.element.position, a.offset) < (b.element.position, b.offset) }.map(\.element)
    }
}
