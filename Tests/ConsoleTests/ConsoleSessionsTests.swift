// SPDX-License-Identifier: Apache-2.0
import Bus
import Console
import Contracts
import TestSupport
import Testing

/// One-time links and browser sessions: a link opens one session, once, before it expires; the
/// caps hold; appctl's end removes what it names.
@Suite struct ConsoleSessionsTests {
    let admin = PeerCredentials(uid: 0, gid: 0, pid: 0)

    func sessions(_ change: (inout ConsoleOptions) -> Void = { _ in }) -> ConsoleSessions {
        var options = ConsoleOptions()
        change(&options)
        return ConsoleSessions(options: options)
    }

    @Test func aLinkOpensOneSessionOnce() throws {
        let store = sessions()
        let link = try store.createLink(for: PeerCredentials(uid: 1000, gid: 27, pid: 0))
        let opened = try #require(try store.redeem(link.token, address: "127.0.0.1"))
        #expect(opened.session.credentials.uid == 1000 && opened.session.credentials.gid == 27)
        #expect(try store.redeem(link.token, address: "127.0.0.1") == nil, "a link works once")
        #expect(try store.redeem("not-a-link", address: "127.0.0.1") == nil)
        let found = try #require(store.session(cookie: opened.cookie))
        #expect(found.id == opened.session.id && found.csrf == opened.session.csrf)
        #expect(opened.cookie != link.token && opened.session.csrf != opened.cookie)
        #expect(store.session(cookie: link.token) == nil, "the link's token is no cookie")
        #expect(store.list().map(\.id) == [opened.session.id] && store.list()[0].uid == 1000)
    }

    @Test func anExpiredLinkOpensNothing() async throws {
        let store = sessions { $0.linkLifetime = .milliseconds(20) }
        let link = try store.createLink(for: admin)
        try await Task.sleep(for: .milliseconds(60))
        #expect(try store.redeem(link.token, address: "127.0.0.1") == nil)
    }

    @Test func anIdleSessionEnds() async throws {
        let store = sessions { $0.sessionIdle = .milliseconds(50) }
        let opened = try #require(try store.redeem(try store.createLink(for: admin).token, address: "::1"))
        #expect(store.session(cookie: opened.cookie) != nil)
        // list() does not count as use: it sees the session go once the idle time passes.
        let ended = await eventually { store.list().isEmpty }
        #expect(ended && store.session(cookie: opened.cookie) == nil)
    }

    @Test func linksAndSessionsAreCapped() throws {
        let store = sessions {
            $0.maxLinks = 2
            $0.maxSessions = 2
        }
        let first = try store.createLink(for: admin)
        _ = try store.createLink(for: admin)
        #expect(throws: ConsoleError.tooManyLinks(limit: 2)) { try store.createLink(for: admin) }
        let a = try #require(try store.redeem(first.token, address: "a"))
        let b = try #require(try store.redeem(try store.createLink(for: admin).token, address: "b"))
        _ = store.session(cookie: a.cookie)  // a is now the most recently used
        let c = try #require(try store.redeem(try store.createLink(for: admin).token, address: "c"))
        #expect(store.session(cookie: b.cookie) == nil, "the least recently used session gave way")
        #expect(store.session(cookie: a.cookie) != nil && store.session(cookie: c.cookie) != nil)
    }

    @Test func endingByIdAndAll() throws {
        let store = sessions()
        let a = try #require(try store.redeem(try store.createLink(for: admin).token, address: "a"))
        let b = try #require(try store.redeem(try store.createLink(for: admin).token, address: "b"))
        let waiting = try store.createLink(for: admin)
        #expect(throws: ConsoleError.unknownSession(id: "nope")) { try store.end(id: "nope") }
        #expect(try store.end(id: a.session.id) == 1)
        #expect(store.session(cookie: a.cookie) == nil && store.session(cookie: b.cookie) != nil)
        #expect(try store.end(id: nil) == 1)
        #expect(store.session(cookie: b.cookie) == nil)
        #expect(try store.redeem(waiting.token, address: "c") == nil, "ending all forgets the links not yet opened")
    }
}
