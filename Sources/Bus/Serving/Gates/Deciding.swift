// SPDX-License-Identifier: Apache-2.0
/// Which calls a gate's `decide` decides without waiting (`Gate.deciding`): what lets the bus
/// answer a call on the transport's thread, gates and all (`GateChain.decideNow`).
public enum Deciding: Sendable {
    /// `decide` always answers `.handle` (the default): a call this gate applies to runs in a
    /// task.
    case never
    /// `decide` answers `.pass` or `.deny` when what it needs is in memory (a session in the
    /// cache), `.handle` otherwise; when it answers `.handle` it must have changed nothing (the
    /// call then runs the chain again, in a task).
    case sometimes
    /// `decide` never answers `.handle`. It may change state (a rate limit's bucket): it is asked
    /// on the transport's thread only when no later gate can send the call to a task after it
    /// (`GateChain.decideNow`), so once per call.
    case always
}
