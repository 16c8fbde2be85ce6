// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The event streams signed-in users hold open, by account: how many each has (capped), and
/// a wake-up for each when the account's sessions or state change, so that a stream opened
/// with a session that was since revoked, or on an account since disabled or deleted, ends at
/// once rather than at its next event (security review finding 2).
///
/// The auth plugin calls `changed(userID:)` after each commit that revokes sessions or changes
/// an account's standing; each woken stream then checks its session again through the gates.
public final class SessionStreams: Sendable {
    private struct State {
        var nextID = 0
        var byUser: [String: [Int: @Sendable () -> Void]] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    /// A stream's place in the registry.
    public struct Watch: Sendable {
        public let userID: String
        public let id: Int
    }

    /// Registers a stream of `userID`'s, whose `changed` runs (on the committing caller's thread:
    /// it must not wait) when the account's sessions or standing change; refused when the
    /// account already holds `limit`.
    public func open(userID: String, limit: Int, changed: @escaping @Sendable () -> Void) throws(TooManyStreams) -> Watch {
        let id = try state.withLock { (s: inout State) throws(TooManyStreams) -> Int in
            let held = s.byUser[userID]?.count ?? 0
            guard held < limit else { throw TooManyStreams(limit: limit) }
            s.nextID += 1
            s.byUser[userID, default: [:]][s.nextID] = changed
            return s.nextID
        }
        return Watch(userID: userID, id: id)
    }

    /// Forgets a stream that ended.
    public func close(_ watch: Watch) {
        state.withLock { s in
            s.byUser[watch.userID]?[watch.id] = nil
            if s.byUser[watch.userID]?.isEmpty == true { s.byUser[watch.userID] = nil }
        }
    }

    /// `userID`'s sessions or account changed (committed): each of its streams checks again.
    public func changed(userID: String) {
        let woken = state.withLock { Array(($0.byUser[userID] ?? [:]).values) }
        for wake in woken { wake() }
    }

    /// Anything may have changed (another instance's signals were lost): every stream checks again.
    public func changedAll() {
        let woken = state.withLock { $0.byUser.values.flatMap(\.values) }
        for wake in woken { wake() }
    }

    /// Streams `userID` holds open.
    public func count(userID: String) -> Int { state.withLock { $0.byUser[userID]?.count ?? 0 } }
}
