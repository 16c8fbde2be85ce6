// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Testing
import TestSupport
@testable import Auth
@testable import Storage

@Suite(.cleansUp) struct SessionCacheTests {
    static func entry(_ id: String) -> SessionCache<String>.Entry { .init(record: id, expiresAt: 100) }

    /// What a write evicts travels to the other instances as a signal and comes back the same.
    @Test func evictionsTravelAsSignals() throws {
        let evictions: [SessionCache<String>.Eviction] = [.account("u_1"), .session(userID: "u 2", accessDigest: "ab+/="), .everything]
        for eviction in evictions {
            #expect(SessionCache<String>.Eviction(signal: try #require(eviction.signal)) == eviction)
        }
        #expect(SessionCache<String>.Eviction.nothing.signal == nil)
        for foreign in ["", "session", "session one d", "session account", "todos account u", "session all x"] {
            #expect(SessionCache<String>.Eviction(signal: foreign) == nil, "\(foreign)")
        }
    }

    /// Following signals: a signalled eviction applies; nothing is served or kept while the
    /// signals are not current (the link is down); `.missed` empties the cache.
    @Test func aCacheThatFollowsSignalsServesOnlyWhileTheyAreCurrent() {
        let signals = DeploymentSignals()
        let cache = SessionCache<String>(capacity: 10)
        cache.follow(signals)
        cache.store(token: "t1", accessDigest: "d1", userID: "u1", Self.entry("u1"), readAt: cache.generation)
        #expect(cache.count == 0, "not current yet: nothing kept")
        signals.confirm(.now)
        cache.store(token: "t1", accessDigest: "d1", userID: "u1", Self.entry("u1"), readAt: cache.generation)
        cache.store(token: "t2", accessDigest: "d2", userID: "u2", Self.entry("u2"), readAt: cache.generation)
        #expect(cache.lookup(token: "t1")?.record == "u1")
        signals.deliver(.message("session one d1 u1"))
        #expect(cache.lookup(token: "t1") == nil && cache.lookup(token: "t2")?.record == "u2")
        signals.lost()
        #expect(cache.lookup(token: "t2") == nil, "the link is down: the cache is bypassed")
        signals.confirm(.now)
        #expect(cache.lookup(token: "t2")?.record == "u2")
        signals.deliver(.missed)
        #expect(cache.count == 0)
        signals.confirm(ContinuousClock.now - .seconds(2))
        cache.store(token: "t3", accessDigest: "d3", userID: "u3", Self.entry("u3"), readAt: cache.generation)
        #expect(cache.count == 0, "signals confirmed longer ago than their staleness are not current")
    }

    @Test(.enabled(if: TestDatabase.engine == .sqlite, "the cache is used only when one instance owns the database"))
    func signedInCallsAreServedFromMemoryUntilAWrite() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller)
        #expect(h.plugin.sessions.count == 1)
        // The session gate resolves the caller from the cache even with the database closed
        // (the onboarding gate then refuses on the cached account: not onboarded yet).
        await h.database.close()
        await expectAuthError("OnboardingRequired") { _ = try await h.bus.send(OnboardedOnly(), as: caller) }
    }

    @Test(.enabled(if: TestDatabase.engine == .sqlite, "the cache is used only when one instance owns the database"))
    func signInsAndWrongPasswordsLeaveTheCacheAloneAndASignOutEvictsOnlyItsSession() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        #expect(h.plugin.sessions.count == 1)
        await expectAuthError("InvalidCredentials") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password"))
        }
        let second = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse")).session
        #expect(h.plugin.sessions.count == 1)
        let other = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: second.accessToken), as: other)
        #expect(h.plugin.sessions.count == 2)
        _ = try await h.bus.send(AuthInterface.SignOut(), as: caller)
        #expect(h.plugin.sessions.count == 1, "only the signed-out session goes")
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller) }
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: other).user.id == session.user.id)
    }

    /// A write about one account evicts that account's sessions before it is answered, and
    /// no one else's: another account's next call is still served from memory.
    @Test(.enabled(if: TestDatabase.engine == .sqlite, "the cache is used only when one instance owns the database"))
    func accountWritesEvictThatAccountBeforeTheyAreAnswered() async throws {
        let h = try await Harness.make()
        let ada = try await h.signUpAndIn()
        let bob = try await h.signUpAndIn("bob@example.com", password: "battery staple")
        let (adaCaller, bobCaller) = (h.connection(), h.connection())
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: ada.accessToken), as: adaCaller)
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: bob.accessToken), as: bobCaller)
        #expect(h.plugin.sessions.count == 2)
        // Disabled by the administrator: Ada's cached session goes at once, Bob's stays.
        _ = try await h.bus.send(AuthInterface.DisableUser(email: "ada@example.com"), as: h.admin)
        #expect(h.plugin.sessions.count(ofAccount: ada.user.id) == 0)
        #expect(h.plugin.sessions.count(ofAccount: bob.user.id) == 1)
        await expectAuthError("AccountDisabled") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: adaCaller) }
        // A refresh evicts only the access token it replaced.
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: bobCaller)
        let refreshed = try await h.bus.send(AuthInterface.Refresh(refreshToken: bob.refreshToken)).session
        #expect(h.plugin.sessions.count(ofAccount: bob.user.id) == 0)
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: bobCaller) }
        let fresh = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: refreshed.accessToken), as: fresh)
        #expect(h.plugin.sessions.count(ofAccount: bob.user.id) == 1)
    }

    @Test func aLookupThatRacedWithAWriteIsNotKept() {
        let cache = SessionCache<String>()
        let before = cache.generation
        cache.evict(.nothing)  // a write committed while the lookup was reading
        cache.store(token: "t", accessDigest: "d", userID: "u", Self.entry("u"), readAt: before)
        #expect(cache.lookup(token: "t") == nil)
        cache.store(token: "t", accessDigest: "d", userID: "u", Self.entry("u"), readAt: cache.generation)
        #expect(cache.lookup(token: "t")?.record == "u")
        cache.evict(.everything)
        #expect(cache.lookup(token: "t") == nil)
    }

    /// 10,000 cached sessions of 1,000 accounts: a sign-out everywhere evicts that account's ten,
    /// a sign-out of one session (or its refresh) that one, and the rest stay cached.
    @Test func evictionsAreTargetedAmongTenThousandSessions() {
        let cache = SessionCache<String>(capacity: 10_000)
        for i in 0..<10_000 {
            let account = "u\(i % 1_000)"
            cache.store(token: "t\(i)", accessDigest: "d\(i)", userID: account, Self.entry(account), readAt: cache.generation)
        }
        #expect(cache.count == 10_000)
        #expect(cache.count(ofAccount: "u7") == 10)
        cache.evict(.account("u7"))
        #expect(cache.count == 9_990)
        #expect(cache.count(ofAccount: "u7") == 0)
        #expect(cache.lookup(token: "t7") == nil && cache.lookup(token: "t9007") == nil)
        #expect(cache.lookup(token: "t8")?.record == "u8")
        cache.evict(.session(userID: "u", accessDigest: "d8"))
        #expect(cache.count == 9_989)
        #expect(cache.lookup(token: "t8") == nil)
        #expect(cache.lookup(token: "t1008")?.record == "u8", "the account's other sessions stay")
        cache.evict(.account("nobody"))
        cache.evict(.session(userID: "u", accessDigest: "unknown"))
        cache.evict(.nothing)
        #expect(cache.count == 9_989)
        // A token stored again (a second lookup) is kept once.
        cache.store(token: "t1008", accessDigest: "d1008", userID: "u8", Self.entry("u8"), readAt: cache.generation)
        #expect(cache.count == 9_989 && cache.count(ofAccount: "u8") == 9)
    }

    @Test func theCacheIsBounded() {
        let cache = SessionCache<String>(capacity: 3)
        for i in 0..<10 { cache.store(token: "t\(i)", accessDigest: "d\(i)", userID: "u\(i)", Self.entry("u\(i)"), readAt: cache.generation) }
        #expect(cache.count <= 3)
        #expect(cache.lookup(token: "t9") != nil)
        #expect(cache.count(ofAccount: "u0") == 0, "the index is bounded with the entries")
        let off = SessionCache<String>(capacity: 0)
        off.store(token: "t", accessDigest: "d", userID: "u", Self.entry("u"), readAt: off.generation)
        #expect(off.lookup(token: "t") == nil)
    }
}
