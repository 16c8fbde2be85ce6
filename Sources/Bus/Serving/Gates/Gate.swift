// SPDX-License-Identifier: Apache-2.0
/// Bus middleware: sees every command on its way to the handler and either passes it on
/// (possibly with a changed envelope) or interrupts it with a typed error.
///
/// The shape is Hummingbird's middleware: one `handle` requirement that calls `next`.
/// Gates are generic over the reply so typed calls, JSON calls and streams share one chain.
public protocol Gate: Sendable {
    /// A short name for logs and metrics ("limits", "session", …).
    var name: String { get }

    /// Where it nests in the chain; the bus orders gates by it.
    var position: GatePosition { get }

    /// Whether this gate enforces the requirement. A command with a requirement that no
    /// installed gate covers is denied before any gate runs (fail closed).
    func covers(_ requirement: Requirement) -> Bool

    /// Whether `handle` has anything to do for this call; when false the chain goes straight
    /// past the gate (most calls need only one or two of them, and each gate passed costs an
    /// async frame). Must say true whenever `handle` would do more than call `next` unchanged.
    func applies(to envelope: Envelope) -> Bool

    /// Whether the gate may apply to some call of a method that declares `requirements`: false
    /// only when `applies(to:)` is false for every call of such a method, whoever makes it (the
    /// gate then stays out of that method's `CallPlan`, and its calls skip it without asking).
    /// True by default; a gate that applies by the method's requirements alone says which.
    func mayApply(toMethodRequiring requirements: [Requirement]) -> Bool

    /// Decides the call from what the gate holds in memory, when it can: `.pass` (after setting
    /// on the envelope what `handle` would set) or `.deny`, with no async frame for the gate;
    /// `.handle` when it cannot (the chain then runs `handle`). A gate that decides must decide
    /// as `handle` would. By default every call goes through `handle`.
    func decide(_ envelope: inout Envelope) -> GateDecision

    /// Which calls `decide` decides without waiting (`.never` by default). A call whose gates
    /// all decide, to a handler that need not wait, is answered on the transport's thread.
    var deciding: Deciding { get }

    /// The errors (full names) this gate may answer a call of a method that declares
    /// `requirements`: what clients must be ready for, listed in the OpenAPI document from the
    /// gates themselves, so the transports name no feature's errors. None by default.
    func errors(answering requirements: [Requirement]) -> [String]

    func handle<Reply: Sendable>(
        _ envelope: Envelope, next: (Envelope) async throws -> Reply
    ) async throws -> Reply
}

extension Gate {
    public var position: GatePosition { .feature }
    public func covers(_ requirement: Requirement) -> Bool { false }
    public func applies(to envelope: Envelope) -> Bool { true }
    public func mayApply(toMethodRequiring requirements: [Requirement]) -> Bool { true }
    public func errors(answering requirements: [Requirement]) -> [String] { [] }
    public func decide(_ envelope: inout Envelope) -> GateDecision { .handle }
    public var deciding: Deciding { .never }

    /// `handle` for a gate whose `decide` always decides (it has nothing to wait for and
    /// nothing to do after the handler): what the chain does in line, for a call that reaches
    /// `handle` anyway. Fails closed should `decide` not decide.
    public func handleByDeciding<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        var envelope = envelope
        switch decide(&envelope) {
        case .pass: return try await next(envelope)
        case .deny(let error): throw error
        case .handle: throw PermissionDenied(reason: "the \(name) gate could not decide \(envelope.name)")
        }
    }
}
