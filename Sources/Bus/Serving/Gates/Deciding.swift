// SPDX-License-Identifier: Apache-2.0
/// Which calls a gate's `decide` decides without waiting (`Gate.deciding`): what lets the bus
/// answer a call on the transport's thread, gates and all (`GateChain.decideNow`).
public enum Deciding: Sendable {
    /// `decide` always answers `.handle` (the default): a call this gate applies to runs in a
    /// task.
    case never
    /// `decide` answers `.pass` or `.deny` when what it needs is in memory (a session in the
    /// cache), `.handle` otherwise. It must change nothing but the envelope: the bus may ask it
    /// twice for one call (once to learn whether the call can be answered at once, once to run).
    case sometimes
    /// `decide` never answers `.handle`. It may change state (a rate limit's bucket): the bus asks
    /// it once per call.
    case always
}
