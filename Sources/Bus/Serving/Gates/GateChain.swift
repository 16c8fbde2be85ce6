// SPDX-License-Identifier: Apache-2.0
/// The gates, outermost first, fixed when the bus is built.
///
/// Running the chain is a direct nest of async calls into the handler: no queue, no task hop.
/// A gate that decides from memory (`Gate.decide`) costs no async frame at all: only the gates
/// that must wait or act after the handler nest.
public struct GateChain: Sendable {
    public let gates: [any Gate]

    public init(_ gates: [any Gate]) { self.gates = gates }

    /// Gate names outermost first, as the order test pins them.
    public var names: [String] { gates.map(\.name) }

    /// The first requirement that no gate covers, if any (`ignoring` one that need not be
    /// checked for this call).
    public func uncovered(_ requirements: [Requirement], ignoring: Requirement? = nil) -> Requirement? {
        // `socket` is the bus's own check (where the call came from), `clientRateLimited` the
        // HTTP API's: neither is a gate's.
        requirements.first { requirement in
            requirement != ignoring && requirement != .socket && requirement != .clientRateLimited && !gates.contains { $0.covers(requirement) }
        }
    }

    /// The gates that may apply to a call of a method that declares `requirements`
    /// (`Gate.mayApply(toMethodRequiring:)`), in order: the chain its calls walk (`CallPlan`).
    public func plan(for requirements: [Requirement]) -> GateChain {
        GateChain(gates.filter { $0.mayApply(toMethodRequiring: requirements) })
    }

    /// Whether any gate has anything to do for `envelope` (else the call goes straight to its
    /// handler).
    public func applies(to envelope: Envelope) -> Bool { gates.contains { $0.applies(to: envelope) } }

    /// Every error a gate of the chain may answer a call of a method that declares
    /// `requirements` (`Gate.errors(answering:)`), in the chain's order, each once.
    public func errors(answering requirements: [Requirement]) -> [String] {
        var seen: Set<String> = []
        return gates.flatMap { $0.errors(answering: requirements) }.filter { seen.insert($0).inserted }
    }

    /// Decides `envelope` without waiting when every gate that applies can (`Gate.deciding`):
    /// true when all passed (`envelope` as they left it), false when one must run `handle`
    /// (nothing but the envelope was changed then), a gate's refusal thrown. The same decisions,
    /// in the same order, as `run` makes, each gate asked once.
    ///
    /// A gate that always decides may change state (the limits gate's bucket): before the first
    /// of them is asked, every later gate that applies must be one that always decides too, so
    /// that no call is sent to the task path (where the chain runs again from the start) after a
    /// state-changing decision. Only a gate that decides sometimes (the session gate, from its
    /// cache) may answer `.handle`, and it changes nothing when it does. (The look-ahead sees the
    /// envelope as it is before the state-changing gate: should that gate set something that
    /// makes a later gate that may wait apply, the call goes to the task path after it decided,
    /// and its decision is made twice. No built-in gate does.)
    public func decideNow(_ envelope: inout Envelope) throws -> Bool {
        var decided = envelope
        var lookedAhead = false
        // Each gate is used where the array keeps it (no copy of the existential per gate).
        for index in gates.indices where gates[index].applies(to: decided) {
            switch gates[index].deciding {
            case .never:
                return false
            case .always where !lookedAhead:
                var later = index + 1
                while later < gates.count {
                    if gates[later].deciding != .always && gates[later].applies(to: decided) { return false }
                    later += 1
                }
                lookedAhead = true
            case .always, .sometimes:
                break
            }
            guard try Self.decide(gates[index], &decided) else { return false }
        }
        envelope = decided
        return true
    }

    /// `gate`'s decision from memory: true when it passed, false when it must run `handle`, its
    /// refusal (counted) thrown.
    @inline(__always)
    private static func decide(_ gate: any Gate, _ envelope: inout Envelope) throws -> Bool {
        switch gate.decide(&envelope) {
        case .pass:
            return true
        case .deny(let error):
            CallMetrics.denied(gate: gate.name, error: error)
            throw error
        case .handle:
            return false
        }
    }

    /// Runs the gates from `index` that decide from memory, in line: the index of the first that
    /// must run `handle` (`gates.count` when none must), a refusal thrown.
    @inline(__always)
    private func decideInLine(_ envelope: inout Envelope, from index: Int) throws -> Int {
        var index = index
        while index < gates.count {
            let gate = gates[index]
            if gate.applies(to: envelope) {
                guard try Self.decide(gate, &envelope) else { return index }
            }
            index += 1
        }
        return index
    }

    /// Runs `envelope` through every gate, then `terminal`.
    @inline(__always)
    public func run<Reply: Sendable>(
        _ envelope: Envelope, from index: Int = 0, terminal: (Envelope) async throws -> Reply
    ) async throws -> Reply {
        var envelope = envelope
        // The gates that decide from memory, in line; the first that must run `handle` nests.
        let index = try decideInLine(&envelope, from: index)
        guard index < gates.count else { return try await terminal(envelope) }
        var passed = false
        do {
            return try await gates[index].handle(envelope) { [index] inner in
                passed = true
                return try await run(inner, from: index + 1, terminal: terminal)
            }
        } catch {
            // Refused by this gate itself (not by a later gate or the handler).
            if !passed { CallMetrics.denied(gate: gates[index].name, error: error) }
            throw error
        }
    }
}
