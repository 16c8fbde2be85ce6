// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Synchronization

/// The console's one-time links and browser sessions, in memory (a restart of appd signs every
/// browser out). Only SHA-256 digests of links and cookies are kept: what a heap dump or a log
/// could show does not sign anyone in. Every session acts with the credentials of the admin
/// whose link opened it (`AdminGate.consoleCredentials`), so the admin gate and the audit see
/// that admin.
public final class ConsoleSessions: Sendable {
    /// A signed-in browser.
    public struct Session: Sendable {
        /// Names it to appctl and in audit lines; not a secret.
        public var id: String
        /// Sent back by the page on every state-changing request.
        public var csrf: String
        public var credentials: PeerCredentials
        public var address: String
        var created: ContinuousClock.Instant
        var lastSeen: ContinuousClock.Instant
        var createdAt: WallTime
        var lastSeenAt: WallTime
    }

    struct Link {
        var credentials: PeerCredentials
        var expires: ContinuousClock.Instant
    }

    struct State {
        var links: [String: Link] = [:]
        var sessions: [String: Session] = [:]
    }

    let options: ConsoleOptions
    private let state = Mutex(State())

    public init(options: ConsoleOptions) {
        self.options = options
    }

    /// A new link's secret (for the URL) and when it expires.
    public func createLink(for credentials: PeerCredentials) throws -> (token: String, expiresAt: WallTime) {
        let token = try SecretToken.generate()
        let now = ContinuousClock.now
        try state.withLock { state throws(ConsoleError) in
            state.links = state.links.filter { $0.value.expires > now }
            guard state.links.count < options.maxLinks else { throw .tooManyLinks(limit: options.maxLinks) }
            state.links[SecretToken.digest(token)] = Link(credentials: credentials, expires: now + options.linkLifetime)
        }
        return (token, WallTime(nanosecondsSinceEpoch: WallTime.now().nanosecondsSinceEpoch + options.linkLifetime.nanoseconds))
    }

    /// Spends a link: the new session and its cookie's value; nil when the link is unknown,
    /// spent or expired.
    public func redeem(_ token: String, address: String) throws -> (cookie: String, session: Session)? {
        let cookie = try SecretToken.generate()
        let csrf = try SecretToken.generate()
        let id = String(try SecretToken.generate().prefix(12))
        let now = ContinuousClock.now
        let wall = WallTime.now()
        return state.withLock { state in
            guard let link = state.links.removeValue(forKey: SecretToken.digest(token)), link.expires > now else { return nil }
            prune(&state, now: now)
            while state.sessions.count >= options.maxSessions, let oldest = state.sessions.min(by: { $0.value.lastSeen < $1.value.lastSeen }) {
                state.sessions[oldest.key] = nil
            }
            let session = Session(
                id: id, csrf: csrf, credentials: link.credentials, address: address, created: now, lastSeen: now, createdAt: wall, lastSeenAt: wall)
            state.sessions[SecretToken.digest(cookie)] = session
            return (cookie, session)
        }
    }

    /// The session a cookie belongs to, marked as used now; nil when there is none (any more).
    public func session(cookie: String) -> Session? {
        let key = SecretToken.digest(cookie)
        return state.withLock { state in use(key, in: &state) }
    }

    /// Whether the session with this id is still open; an event stream of it asks once a
    /// second, and counts as use while it is open (watching events is using the console), but
    /// the absolute lifetime still ends it.
    public func stillOpen(id: String) -> Bool {
        state.withLock { state in
            guard let key = state.sessions.first(where: { $0.value.id == id })?.key else { return false }
            return use(key, in: &state) != nil
        }
    }

    /// The session under `key` marked as used now, or nil (an expired one is removed).
    private func use(_ key: String, in state: inout State) -> Session? {
        let now = ContinuousClock.now
        guard var session = state.sessions[key] else { return nil }
        guard !expired(session, now: now) else {
            state.sessions[key] = nil
            return nil
        }
        session.lastSeen = now
        session.lastSeenAt = .now()
        state.sessions[key] = session
        return session
    }

    /// Ends the session a cookie belongs to (signing out).
    public func end(cookie: String) {
        _ = state.withLock { $0.sessions.removeValue(forKey: SecretToken.digest(cookie)) }
    }

    /// Ends the session with this id, or every session and waiting link; how many sessions ended.
    public func end(id: String?) throws(ConsoleError) -> Int {
        try state.withLock { state throws(ConsoleError) in
            guard let id else {
                let count = state.sessions.count
                state = State()
                return count
            }
            guard let key = state.sessions.first(where: { $0.value.id == id })?.key else { throw .unknownSession(id: id) }
            state.sessions[key] = nil
            return 1
        }
    }

    /// The open sessions, oldest first, as io.appd.Console.Sessions lists them.
    public func list() -> [ConsoleInterface.Session] {
        let now = ContinuousClock.now
        return state.withLock { state in
            prune(&state, now: now)
            return state.sessions.values.sorted { $0.created < $1.created }.map { session in
                let ends = min(session.lastSeen + options.sessionIdle, session.created + options.sessionLifetime)
                let expiresAt = WallTime(nanosecondsSinceEpoch: WallTime.now().nanosecondsSinceEpoch + (ends - now).nanoseconds)
                return ConsoleInterface.Session(
                    id: session.id, uid: Int64(session.credentials.uid), createdAt: session.createdAt.rfc3339, lastSeenAt: session.lastSeenAt.rfc3339,
                    expiresAt: expiresAt.rfc3339, address: session.address)
            }
        }
    }

    private func expired(_ session: Session, now: ContinuousClock.Instant) -> Bool {
        now - session.lastSeen > options.sessionIdle || now - session.created > options.sessionLifetime
    }

    private func prune(_ state: inout State, now: ContinuousClock.Instant) {
        state.sessions = state.sessions.filter { !expired($0.value, now: now) }
        state.links = state.links.filter { $0.value.expires > now }
    }
}
