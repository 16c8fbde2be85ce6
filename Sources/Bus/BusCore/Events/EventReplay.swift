// SPDX-License-Identifier: Apache-2.0
/// The durable event log as the bus's wire sees it: replay by sequence number for
/// `Subscribe(since:)`, and appending one event on its own for durable `Publish`.
public protocol EventReplay: Sendable {
    /// Events after `sequence`, oldest first, at most `limit` (a page may end sooner, at a
    /// byte budget: only an empty page says the log has no more).
    func events(after sequence: Int64, limit: Int) async throws -> [BusEvent]
    /// Events about `owner` after `sequence`, oldest first, at most `limit`: what a signed-in
    /// user's replay reads, through the owner index instead of the whole log (security review
    /// finding 9).
    func events(about owner: String, after sequence: Int64, limit: Int) async throws -> [BusEvent]
    /// Commits one event to the log (then publishes it live); returns its sequence number.
    func append(_ event: BusEvent) async throws -> Int64
}
