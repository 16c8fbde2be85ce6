// SPDX-License-Identifier: Apache-2.0
/// What a call of one method goes through, worked out once when its handler is installed
/// (`CommandBus.install`), not on every call: the method's requirements, the gates that may
/// apply to it (`Gate.mayApply(toMethodRequiring:)`, in the chain's order), and the requirement
/// no gate covers, if any. A call's chain walks only these gates, and asks each whether it
/// applies to the call (`Gate.applies(to:)`) as before.
///
/// A class: a handler hands its plan on with one retain.
final class CallPlan: Sendable {
    let requirements: [Requirement]
    let gates: GateChain
    /// The first requirement no gate covers for a call without an idempotency key (`idempotent`
    /// needs its gate only with one) and for a call with one.
    let uncovered: Requirement?
    let uncoveredWithKey: Requirement?

    init(requirements: [Requirement], chain: GateChain) {
        self.requirements = requirements
        self.gates = chain.plan(for: requirements)
        self.uncovered = chain.uncovered(requirements, ignoring: .idempotent)
        self.uncoveredWithKey = chain.uncovered(requirements)
    }
}
