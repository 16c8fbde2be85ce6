// SPDX-License-Identifier: Apache-2.0
import Storage
import Synchronization

/// Resolved sessions kept in memory, so the session gate does not read the database on every
/// call (that read, a hop to the reader thread and back, was a large part of a signed-in
/// call's cost), keyed by the access token as presented: a hit costs one dictionary lookup, not
/// a SHA-256 and a base64 of the token (the digest is made only on a miss, to read the store).
/// The tokens live only in this process's memory, as they do in the connections that carry them;
/// the database keeps digests only.
///
/// Correct because every change to accounts and sessions goes through this process's
/// `AuthRepository`, which evicts what each write changed after it commits and before the
/// write's caller is answered (`evict(_:)`): a sign-out, a revocation, a password change, a
/// disabled or deleted account takes effect on the next call, as without the cache. Only what
/// the write changed goes — the account's sessions, or one session (a `Refresh` evicts only the
/// access token it replaced) — so one user's sign-out does not send every other signed-in
/// user's next call to the database. A lookup that raced with a write is not stored (the
/// generation moved on while it read). Expiry is checked on every hit.
///
/// When other instances change sessions in the same database (several appd instances on one
/// PostgreSQL, docs/postgres.md), each of their writes also signals what it changed to every
/// instance when it commits (`Transaction.signal`, `DeploymentSignals`), and this cache follows
/// those signals (`follow`): a revocation anywhere is forgotten everywhere at once. The cache
/// answers only while the signals are current (every signal committed more than a second ago
/// has been heard); while the link that carries them is down it is bypassed, and when it comes
/// back the cache starts empty.
final class SessionCache<Record: Sendable>: Sendable {
    /// A class, not a struct: a hit hands it on with one retain, not a copy of every string
    /// of the account's record (35 retains per signed-in `WhoAmI` went to such copies).
    final class Entry: Sendable {
        let record: Record
        let expiresAt: Int64

        init(record: Record, expiresAt: Int64) {
            self.record = record
            self.expiresAt = expiresAt
        }
    }

    /// What a write changed, so what the cache forgets.
    enum Eviction: Sendable, Equatable {
        /// Nothing cached can have changed (a new account, a new session).
        case nothing
        /// Every session of the account (its standing, profile, password or sessions changed).
        case account(String)
        /// One session of the account, by the digest of its access token (signed out, or refreshed).
        case session(userID: String, accessDigest: String)
        /// Anything (a write whose outcome is not known: it failed).
        case everything

        /// The account whose sessions changed, if one did.
        var userID: String? {
            switch self {
            case .account(let id), .session(let id, _): id
            case .nothing, .everything: nil
            }
        }

        /// The eviction as a deployment signal for the other instances; nil for `.nothing`.
        var signal: String? {
            switch self {
            case .nothing: nil
            case .account(let id): "session account \(id)"
            case .session(let id, let digest): "session one \(digest) \(id)"
            case .everything: "session all"
            }
        }

        /// The eviction another instance signalled; nil for another kind of signal.
        init?(signal: String) {
            let parts = signal.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0] == "session" else { return nil }
            switch (parts[1], parts.count) {
            case ("account", 3): self = .account(String(parts[2]))
            case ("one", 4): self = .session(userID: String(parts[3]), accessDigest: String(parts[2]))
            case ("all", 2): self = .everything
            default: return nil
            }
        }
    }

    private struct Slot {
        var entry: Entry
        var userID: String
        var accessDigest: String
    }

    private struct State {
        var generation: UInt64 = 0
        /// The other instances' signals, when they share the database.
        var follows: DeploymentSignals?
        var byToken: [String: Slot] = [:]
        /// The cached tokens of each account, and the token of each access digest: what a
        /// targeted eviction finds without walking the whole cache.
        var tokensByAccount: [String: [String]] = [:]
        var tokenByDigest: [String: String] = [:]

        mutating func remove(token: String) {
            guard let slot = byToken.removeValue(forKey: token) else { return }
            tokenByDigest[slot.accessDigest] = nil
            if var tokens = tokensByAccount[slot.userID] {
                tokens.removeAll { $0 == token }
                tokensByAccount[slot.userID] = tokens.isEmpty ? nil : tokens
            }
        }

        mutating func removeAll() {
            byToken.removeAll(keepingCapacity: true)
            tokensByAccount.removeAll(keepingCapacity: true)
            tokenByDigest.removeAll(keepingCapacity: true)
        }
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 10_000) { self.capacity = max(0, capacity) }

    /// Follows what other instances sharing the database signal (once; later calls do nothing).
    func follow(_ signals: DeploymentSignals) {
        let first = state.withLock { s -> Bool in
            guard s.follows == nil else { return false }
            s.follows = signals
            return true
        }
        guard first else { return }
        signals.listen { [self] signal in
            switch signal {
            case .missed: evict(.everything)
            case .message(let message): if let eviction = Eviction(signal: message) { evict(eviction) }
            }
        }
    }

    /// The cached lookup for an access token as presented, nil when not cached (or when the
    /// other instances' signals are not current).
    func lookup(token: String) -> Entry? {
        let (entry, follows) = state.withLock { ($0.byToken[token]?.entry, $0.follows) }
        guard let entry else { return nil }
        if let follows, !follows.isCurrent { return nil }
        return entry
    }

    /// The generation to hand back to `store`: take it before reading the database.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps a lookup read while the generation was `generation`; dropped if a write committed
    /// since. A full cache starts over (bounded memory; the next calls read the store again).
    func store(token: String, accessDigest: String, userID: String, _ entry: Entry, readAt generation: UInt64) {
        state.withLock { s in
            guard s.generation == generation, capacity > 0, s.follows?.isCurrent ?? true else { return }
            s.remove(token: token)
            if s.byToken.count >= capacity { s.removeAll() }
            s.byToken[token] = Slot(entry: entry, userID: userID, accessDigest: accessDigest)
            s.tokensByAccount[userID, default: []].append(token)
            s.tokenByDigest[accessDigest] = token
        }
    }

    /// Forgets what a write changed (and moves the generation on, so a lookup that read the
    /// store before the write committed is not kept).
    func evict(_ eviction: Eviction) {
        state.withLock { s in
            s.generation &+= 1
            switch eviction {
            case .nothing:
                break
            case .account(let userID):
                for token in s.tokensByAccount[userID] ?? [] { s.remove(token: token) }
            case .session(_, let digest):
                if let token = s.tokenByDigest[digest] { s.remove(token: token) }
            case .everything:
                s.removeAll()
            }
        }
    }

    var count: Int { state.withLock { $0.byToken.count } }

    /// How many sessions of `userID` are cached (tests).
    func count(ofAccount userID: String) -> Int { state.withLock { $0.tokensByAccount[userID]?.count ?? 0 } }
}
