// SPDX-License-Identifier: Apache-2.0

/// The record of one keyed call's outcome while the call runs, as its writes see it.
///
/// The idempotency gate makes it the task's `current` record; storage captures it with each
/// write the handler makes (like the deadline, `Deadline.current`) and keeps the record's row
/// **in the same transaction** as the write's own changes, so a write is never committed
/// without its key (a retry after a crash finds the key) and a second attempt with the same key
/// cannot commit a second effect (its row collides and its write is undone). A repository that
/// knows the reply its write leads to stages it (`Transaction.stageReply`): the row then holds
/// the reply itself, and a `kill -9` between the commit and the reply loses nothing.
public final class IdempotencyRecord: Sendable {
    /// Who the key belongs to: `user:ID`, `plugin:NAME` or `uid:N` (keys of different callers
    /// never meet).
    public let scope: String
    public let method: String
    public let key: String
    /// SHA-256 of the method and the call's parameters (canonical JSON), hex.
    public let fingerprint: String

    private struct State {
        var staged: JSONValue?
        /// A write carrying the row committed; with the reply (or, later, not).
        var committed = false
        var committedReply = false
    }
    private let state = Locked(State())

    /// The keyed call the current task works for; nil outside one (and in calls a handler
    /// makes itself: those are separate calls, with keys of their own if any).
    @TaskLocal public static var current: IdempotencyRecord?

    public init(scope: String, method: String, key: String, fingerprint: String) {
        self.scope = scope
        self.method = method
        self.key = key
        self.fingerprint = fingerprint
    }

    /// The reply (the method's whole reply object) the call gives if the write being run
    /// commits. Called by a repository inside its write.
    public func stage(reply: JSONValue) { state.withLock { $0.staged = reply } }

    /// Forgets a staged reply: storage calls it before each run of a write, so what a write
    /// keeps is what that very run staged (a batch's writes may be run twice).
    package func unstage() { state.withLock { $0.staged = nil } }

    /// The reply staged so far, if any.
    public var staged: JSONValue? { state.withLock { $0.staged } }

    /// Storage reports the commit of a write that carried the row (with the staged reply or not).
    public func committed(withReply: Bool) {
        state.withLock { s in
            s.committed = true
            s.committedReply = s.committedReply || withReply
        }
    }

    /// Whether a write already committed the row, and whether with the reply.
    public var outcome: (committed: Bool, withReply: Bool) { state.withLock { ($0.committed, $0.committedReply) } }
}
