// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Storage

/// The console's one-time links and browser sessions, in the database: a link made on one
/// instance signs in on any instance of the deployment (several appd on one PostgreSQL), a
/// session works on every one of them, and a restart signs nobody out. Only SHA-256 digests of
/// links and cookies are stored, and the page's CSRF token is derived from the cookie (HMAC),
/// not stored: what the database, a heap dump or a log could show does not sign anyone in.
/// Every session acts with the credentials of the admin whose link opened it
/// (`AdminGate.consoleCredentials`), so the admin gate and the audit see that admin.
public final class ConsoleSessions: Sendable {
    /// A signed-in browser.
    public struct Session: Sendable {
        /// Names it to appctl and in audit lines; not a secret.
        public var id: String
        /// Sent back by the page on every state-changing request.
        public var csrf: String
        public var credentials: PeerCredentials
        public var address: String
        var createdAt: WallTime
        var lastSeenAt: WallTime
    }

    let options: ConsoleOptions
    private let database: any Database
    private let clock: @Sendable () -> WallTime

    /// The console's tables.
    public static let migrations = [
        Migration(
            plugin: "console", version: 1,
            sql: """
                CREATE TABLE console_links (
                  digest TEXT PRIMARY KEY,
                  uid INTEGER NOT NULL,
                  gid INTEGER NOT NULL,
                  pid INTEGER NOT NULL,
                  expires_at INTEGER NOT NULL
                );
                CREATE TABLE console_sessions (
                  digest TEXT PRIMARY KEY,
                  id TEXT NOT NULL UNIQUE,
                  uid INTEGER NOT NULL,
                  gid INTEGER NOT NULL,
                  pid INTEGER NOT NULL,
                  address TEXT NOT NULL,
                  created_at INTEGER NOT NULL,
                  last_seen_at INTEGER NOT NULL
                );
                """)
    ]

    /// Sessions in `database`, whose console tables must exist (`open` makes them).
    public init(options: ConsoleOptions, database: any Database, clock: @escaping @Sendable () -> WallTime = { .now() }) {
        self.options = options
        self.database = database
        self.clock = clock
    }

    /// Brings the console's tables up to date, then the sessions in them.
    public static func open(
        options: ConsoleOptions, database: any Database, clock: @escaping @Sendable () -> WallTime = { .now() }
    ) async throws -> ConsoleSessions {
        try await Migrator.migrate(database, migrations)
        return ConsoleSessions(options: options, database: database, clock: clock)
    }

    /// A new link's secret (for the URL) and when it expires.
    public func createLink(for credentials: PeerCredentials) async throws -> (token: String, expiresAt: WallTime) {
        let token = try SecretToken.generate()
        let now = clock().nanosecondsSinceEpoch
        let expires = now + options.linkLifetime.nanoseconds
        let (maxLinks, digest) = (options.maxLinks, SecretToken.digest(token))
        try await database.write { tx in
            try tx.execute("DELETE FROM console_links WHERE expires_at <= ?", [.integer(now)])
            let waiting = try tx.query("SELECT COUNT(*) AS n FROM console_links").first?.integer("n") ?? 0
            guard waiting < maxLinks else { throw ConsoleError.tooManyLinks(limit: maxLinks) }
            try tx.execute(
                "INSERT INTO console_links (digest, uid, gid, pid, expires_at) VALUES (?, ?, ?, ?, ?)",
                [.text(digest), .integer(Int64(credentials.uid)), .integer(Int64(credentials.gid)), .integer(Int64(credentials.pid)), .integer(expires)])
        }
        return (token, WallTime(nanosecondsSinceEpoch: expires))
    }

    /// Spends a link: the new session and its cookie's value; nil when the link is unknown,
    /// spent or expired. The least recently used sessions give way past `maxSessions`.
    public func redeem(_ token: String, address: String) async throws -> (cookie: String, session: Session)? {
        let cookie = try SecretToken.generate()
        let id = String(try SecretToken.generate().prefix(12))
        let now = clock().nanosecondsSinceEpoch
        let (link, cookieDigest, options) = (SecretToken.digest(token), SecretToken.digest(cookie), options)
        let credentials = try await database.write { tx -> PeerCredentials? in
            guard let row = try tx.query("DELETE FROM console_links WHERE digest = ? RETURNING uid, gid, pid, expires_at", [.text(link)]).first,
                let uid = row.integer("uid"), let gid = row.integer("gid"), let pid = row.integer("pid"), let expires = row.integer("expires_at"),
                expires > now
            else { return nil }
            try Self.prune(tx, now: now, options: options)
            let open = try tx.query("SELECT COUNT(*) AS n FROM console_sessions").first?.integer("n") ?? 0
            if open >= Int64(options.maxSessions) {
                try tx.execute(
                    "DELETE FROM console_sessions WHERE digest IN (SELECT digest FROM console_sessions ORDER BY last_seen_at LIMIT ?)",
                    [.integer(open - Int64(options.maxSessions) + 1)])
            }
            try tx.execute(
                "INSERT INTO console_sessions (digest, id, uid, gid, pid, address, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [.text(cookieDigest), .text(id), .integer(uid), .integer(gid), .integer(pid), .text(address), .integer(now), .integer(now)])
            return PeerCredentials(uid: .init(truncatingIfNeeded: uid), gid: .init(truncatingIfNeeded: gid), pid: .init(truncatingIfNeeded: pid))
        }
        guard let credentials else { return nil }
        let wall = WallTime(nanosecondsSinceEpoch: now)
        return (cookie, Session(id: id, csrf: Self.csrf(cookie), credentials: credentials, address: address, createdAt: wall, lastSeenAt: wall))
    }

    /// The session a cookie belongs to, marked as used now; nil when there is none (any more).
    public func session(cookie: String) async throws -> Session? {
        guard var session = try await use("digest", SecretToken.digest(cookie)) else { return nil }
        session.csrf = Self.csrf(cookie)
        return session
    }

    /// Whether the session with this id is still open; an event stream of it asks once a
    /// second, and counts as use while it is open (watching events is using the console), but
    /// the absolute lifetime still ends it.
    public func stillOpen(id: String) async throws -> Bool {
        try await use("id", id) != nil
    }

    /// The session whose `column` is `value` marked as used now (written only when the mark
    /// moved by a twentieth of the idle time, at most a minute: a page polls every few seconds),
    /// or nil (an expired one is removed).
    private func use(_ column: String, _ value: String) async throws -> Session? {
        let now = clock().nanosecondsSinceEpoch
        let options = options
        let found = try await database.read { tx in
            try tx.query("SELECT * FROM console_sessions WHERE \(column) = ?", [.text(value)]).first
        }
        guard let row = found, let digest = row.text("digest"), var session = Self.session(row) else { return nil }
        guard !Self.expired(created: session.createdAt.nanosecondsSinceEpoch, lastSeen: session.lastSeenAt.nanosecondsSinceEpoch, now: now, options) else {
            try await database.write { tx in try tx.execute("DELETE FROM console_sessions WHERE digest = ?", [.text(digest)]) }
            return nil
        }
        let stale = min(options.sessionIdle.nanoseconds / 20, Duration.seconds(60).nanoseconds)
        if now - session.lastSeenAt.nanosecondsSinceEpoch >= stale {
            try await database.write { tx in
                try tx.execute("UPDATE console_sessions SET last_seen_at = ? WHERE digest = ? AND last_seen_at < ?", [.integer(now), .text(digest), .integer(now)])
            }
            session.lastSeenAt = WallTime(nanosecondsSinceEpoch: now)
        }
        return session
    }

    /// Ends the session a cookie belongs to (signing out).
    public func end(cookie: String) async throws {
        let digest = SecretToken.digest(cookie)
        try await database.write { tx in try tx.execute("DELETE FROM console_sessions WHERE digest = ?", [.text(digest)]) }
    }

    /// Ends the session with this id, or every session and waiting link; how many sessions ended.
    public func end(id: String?) async throws -> Int {
        try await database.write { tx in
            guard let id else {
                try tx.execute("DELETE FROM console_links")
                return try tx.execute("DELETE FROM console_sessions")
            }
            guard try tx.execute("DELETE FROM console_sessions WHERE id = ?", [.text(id)]) == 1 else { throw ConsoleError.unknownSession(id: id) }
            return 1
        }
    }

    /// The open sessions, oldest first, as io.appd.Console.Sessions lists them.
    public func list() async throws -> [ConsoleInterface.Session] {
        let now = clock().nanosecondsSinceEpoch
        let options = options
        let rows = try await database.write { tx in
            try Self.prune(tx, now: now, options: options)
            return try tx.query("SELECT * FROM console_sessions ORDER BY created_at, id")
        }
        return rows.compactMap(Self.session).map { session in
            let ends = min(
                session.lastSeenAt.nanosecondsSinceEpoch + options.sessionIdle.nanoseconds, session.createdAt.nanosecondsSinceEpoch + options.sessionLifetime.nanoseconds)
            return ConsoleInterface.Session(
                id: session.id, uid: Int64(session.credentials.uid), createdAt: session.createdAt.rfc3339, lastSeenAt: session.lastSeenAt.rfc3339,
                expiresAt: WallTime(nanosecondsSinceEpoch: ends).rfc3339, address: session.address)
        }
    }

    /// The page's CSRF token for the session of `cookie`: derived, never stored.
    static func csrf(_ cookie: String) -> String {
        Base64.encode(Digest.hmacSHA256(key: Array(cookie.utf8), data: Array("appd.console.csrf".utf8)), urlSafe: true)
    }

    private static func session(_ row: Row) -> Session? {
        guard let id = row.text("id"), let uid = row.integer("uid"), let gid = row.integer("gid"), let pid = row.integer("pid"),
            let address = row.text("address"), let created = row.integer("created_at"), let seen = row.integer("last_seen_at")
        else { return nil }
        return Session(
            id: id, csrf: "", credentials: PeerCredentials(uid: .init(truncatingIfNeeded: uid), gid: .init(truncatingIfNeeded: gid), pid: .init(truncatingIfNeeded: pid)),
            address: address, createdAt: WallTime(nanosecondsSinceEpoch: created), lastSeenAt: WallTime(nanosecondsSinceEpoch: seen))
    }

    private static func expired(created: Int64, lastSeen: Int64, now: Int64, _ options: ConsoleOptions) -> Bool {
        now - lastSeen > options.sessionIdle.nanoseconds || now - created > options.sessionLifetime.nanoseconds
    }

    private static func prune(_ tx: any Transaction, now: Int64, options: ConsoleOptions) throws {
        try tx.execute(
            "DELETE FROM console_sessions WHERE last_seen_at < ? OR created_at < ?",
            [.integer(now - options.sessionIdle.nanoseconds), .integer(now - options.sessionLifetime.nanoseconds)])
        try tx.execute("DELETE FROM console_links WHERE expires_at <= ?", [.integer(now)])
    }
}
