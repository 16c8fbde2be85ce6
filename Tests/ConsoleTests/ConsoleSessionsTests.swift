// SPDX-License-Identifier: Apache-2.0
import Bus
import Console
import Contracts
import Glibc
import Storage
import TestSupport
import Testing

/// One-time links and browser sessions, in the database: a link opens one session, once, before
/// it expires; the caps hold; appctl's end removes what it names; a session outlives a restart
/// and works on every instance of a deployment.
@Suite(.cleansUp) struct ConsoleSessionsTests {
    let admin = PeerCredentials(uid: 0, gid: 0, pid: 0)
    let clock = TestClock()

    /// A fresh database of the engine under test, its path (to open again, as a restart does).
    static func database() async throws -> (any Database, String) {
        let scope = try TestScope.required(by: "a console database")
        let path = try scope.directory("appd-console") + "/appd.db"
        let database = try await TestDatabase.open(path: path, outbox: nil)
        scope.closes(database)
        return (database, path)
    }

    func sessions(_ change: (inout ConsoleOptions) -> Void = { _ in }) async throws -> ConsoleSessions {
        var options = ConsoleOptions()
        change(&options)
        return try await ConsoleSessions.open(options: options, database: try await Self.database().0, clock: { [clock] in clock.now })
    }

    @Test func aLinkOpensOneSessionOnce() async throws {
        let store = try await sessions()
        let link = try await store.createLink(for: PeerCredentials(uid: 1000, gid: 27, pid: 0))
        let opened = try #require(try await store.redeem(link.token, address: "127.0.0.1"))
        #expect(opened.session.credentials.uid == 1000 && opened.session.credentials.gid == 27)
        #expect(try await store.redeem(link.token, address: "127.0.0.1") == nil, "a link works once")
        #expect(try await store.redeem("not-a-link", address: "127.0.0.1") == nil)
        let found = try #require(try await store.session(cookie: opened.cookie))
        #expect(found.id == opened.session.id && found.csrf == opened.session.csrf)
        #expect(opened.cookie != link.token && opened.session.csrf != opened.cookie)
        #expect(try await store.session(cookie: link.token) == nil, "the link's token is no cookie")
        let listed = try await store.list()
        #expect(listed.map(\.id) == [opened.session.id] && listed[0].uid == 1000)
    }

    @Test func anExpiredLinkOpensNothing() async throws {
        let store = try await sessions { $0.linkLifetime = .seconds(120) }
        let link = try await store.createLink(for: admin)
        clock.advance(seconds: 120)
        #expect(try await store.redeem(link.token, address: "127.0.0.1") == nil)
    }

    @Test func anIdleSessionEnds() async throws {
        let store = try await sessions { $0.sessionIdle = .seconds(600) }
        let opened = try #require(try await store.redeem(try await store.createLink(for: admin).token, address: "::1"))
        clock.advance(seconds: 590)
        #expect(try await store.session(cookie: opened.cookie) != nil, "use moves the idle time on")
        clock.advance(seconds: 590)
        // list() does not count as use: it sees the session go once the idle time passes.
        #expect(try await store.list().count == 1)
        clock.advance(seconds: 11)
        #expect(try await store.list().isEmpty)
        #expect(try await store.session(cookie: opened.cookie) == nil)
    }

    @Test func linksAndSessionsAreCapped() async throws {
        // Use is recorded to a twentieth of the idle time (at most a minute): least recently used to that.
        let store = try await sessions {
            $0.maxLinks = 2
            $0.maxSessions = 2
        }
        let first = try await store.createLink(for: admin)
        _ = try await store.createLink(for: admin)
        await #expect(throws: ConsoleError.tooManyLinks(limit: 2)) { try await store.createLink(for: admin) }
        let a = try #require(try await store.redeem(first.token, address: "a"))
        let b = try #require(try await store.redeem(try await store.createLink(for: admin).token, address: "b"))
        clock.advance(seconds: 60)
        _ = try await store.session(cookie: a.cookie)  // a is now the most recently used
        let c = try #require(try await store.redeem(try await store.createLink(for: admin).token, address: "c"))
        #expect(try await store.session(cookie: b.cookie) == nil, "the least recently used session gave way")
        #expect(try await store.session(cookie: a.cookie) != nil)
        #expect(try await store.session(cookie: c.cookie) != nil)
    }

    @Test func endingByIdAndAll() async throws {
        let store = try await sessions()
        let a = try #require(try await store.redeem(try await store.createLink(for: admin).token, address: "a"))
        let b = try #require(try await store.redeem(try await store.createLink(for: admin).token, address: "b"))
        let waiting = try await store.createLink(for: admin)
        await #expect(throws: ConsoleError.unknownSession(id: "nope")) { try await store.end(id: "nope") }
        #expect(try await store.end(id: a.session.id) == 1)
        #expect(try await store.session(cookie: a.cookie) == nil)
        #expect(try await store.session(cookie: b.cookie) != nil)
        #expect(try await store.end(id: nil) == 1)
        #expect(try await store.session(cookie: b.cookie) == nil)
        #expect(try await store.redeem(waiting.token, address: "c") == nil, "ending all forgets the links not yet opened")
    }

    /// The database holds digests only: neither the link's token, the cookie nor the CSRF token.
    /// A restart (the database opened again) signs nobody out, and a link made before it works.
    @Test func sessionsAndLinksOutliveARestartAndOnlyDigestsAreStored() async throws {
        let (database, path) = try await Self.database()
        let before = try await ConsoleSessions.open(options: ConsoleOptions(), database: database, clock: { [clock] in clock.now })
        let opened = try #require(try await before.redeem(try await before.createLink(for: admin).token, address: "a"))
        let waiting = try await before.createLink(for: admin)
        let stored = try await database.read { tx in
            try (tx.query("SELECT * FROM console_sessions") + tx.query("SELECT * FROM console_links")).map { row in row.columns.map { "\(row[$0])" }.joined(separator: " ") }
        }.joined(separator: "\n")
        for secret in [opened.cookie, opened.session.csrf, waiting.token] { #expect(!stored.contains(secret)) }
        await database.close()

        let reopened = try await TestDatabase.open(path: path, outbox: nil)
        try TestScope.required(by: "the reopened database").closes(reopened)
        let after = try await ConsoleSessions.open(options: ConsoleOptions(), database: reopened, clock: { [clock] in clock.now })
        let found = try #require(try await after.session(cookie: opened.cookie))
        #expect(found.id == opened.session.id && found.csrf == opened.session.csrf && found.credentials.uid == 0)
        #expect(try await after.redeem(waiting.token, address: "b") != nil)
    }
}

/// Two instances of one deployment on PostgreSQL: a link made on one signs in on the other, the
/// session works on both, and appctl's end on one signs it out on both.
@Suite(.enabled(if: TestDatabase.hasPostgres, Comment(rawValue: TestDatabase.skipped)))
struct PostgresConsoleSessionsTests {
    @Test func aSessionWorksOnEveryInstance() async throws {
        let url = try await TestDatabase.pool.run { try TestDatabase.postgres() }
        var options = PostgresDatabase.Options()
        options.readers = 1
        let first = try await PostgresDatabase.open(url: url, outbox: nil, options: options)
        let second = try await PostgresDatabase.open(url: url, outbox: nil, options: options)
        let a = try await ConsoleSessions.open(options: ConsoleOptions(), database: first)
        let b = try await ConsoleSessions.open(options: ConsoleOptions(), database: second)
        let link = try await a.createLink(for: PeerCredentials(uid: 1000, gid: 1000, pid: 1))
        let opened = try #require(try await b.redeem(link.token, address: "b"))
        #expect(try await a.redeem(link.token, address: "a") == nil, "spent on B")
        #expect(try await a.session(cookie: opened.cookie)?.id == opened.session.id)
        #expect(try await a.stillOpen(id: opened.session.id))
        #expect(try await b.end(id: opened.session.id) == 1)
        #expect(try await a.session(cookie: opened.cookie) == nil)
        #expect(try await a.stillOpen(id: opened.session.id) == false)
        await first.close()
        await second.close()
    }
}
