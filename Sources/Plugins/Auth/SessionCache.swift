// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Resolved sessions kept in memory, so the session gate does not read the database on every
/// call (that read, a hop to the reader thread and back, was a large part of a signed-in
/// call's cost).
///
/// Correct because every change to accounts and sessions goes through this process's
/// `AuthRepository`, which calls `invalidate()` after each write commits and before the write's
/// caller is answered: a sign-out, a revocation, a disabled or deleted account takes effect on
/// the next call, as without the cache. A lookup that raced with a write is not stored (the
/// generation moved on while it read). Expiry is checked on every hit.
///
/// When another process can change sessions in the same database (several appd instances on
/// one PostgreSQL, docs/postgres.md), this process would not hear of it: the auth plugin then does
/// not use the cache at all (`Database.sharedAcrossInstances`), so nothing can be stale.
final class SessionCache<Record: Sendable>: Sendable {
    struct Entry: Sendable {
        let record: Record
        let expiresAt: Int64
    }

    private struct State {
        var generation: UInt64 = 0
        var entries: [String: Entry] = [:]
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 10_000) { self.capacity = max(0, capacity) }

    /// The cached lookup for a token digest, nil when not cached.
    func lookup(_ digest: String) -> Entry? {
        state.withLock { $0.entries[digest] }
    }

    /// The generation to hand back to `store`: take it before reading the database.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps a lookup read while the generation was `generation`; dropped if a write committed since.
    func store(_ digest: String, _ entry: Entry, readAt generation: UInt64) {
        state.withLock { s in
            guard s.generation == generation, capacity > 0 else { return }
            if s.entries.count >= capacity { s.entries.removeAll(keepingCapacity: true) }
            s.entries[digest] = entry
        }
    }

    /// Forgets everything: an account or session changed.
    func invalidate() {
        state.withLock { s in
            s.generation &+= 1
            s.entries.removeAll(keepingCapacity: true)
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
