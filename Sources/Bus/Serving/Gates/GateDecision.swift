// SPDX-License-Identifier: Apache-2.0
/// What a gate decided about a call without waiting (`Gate.decide`).
public enum GateDecision: Sendable {
    /// The call goes on to the next gate, with the envelope as `decide` left it; the gate has
    /// nothing to do after the handler.
    case pass
    /// The call is refused with this (typed) error.
    case deny(any Error)
    /// The gate must run `handle`: it needs to wait (a database read, a lock), or to act after
    /// the handler (an audit line, a use given back). The envelope must be as `decide` got it.
    case handle
}
