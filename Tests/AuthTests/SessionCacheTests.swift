// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Testing
import TestSupport
@testable import Auth

@Suite struct SessionCacheTests {
    static func entry(_ id: String) -> SessionCache<String>.Entry { .init(record: id, expiresAt: 100) }

    /// The cache is for one instance owning its database: on one shared by several instances
    /// (PostgreSQL) it stays empty, and a revoked session is seen at once.
    @Test func onADatabaseSharedByInstancesTheCacheIsNotUsed() async throws {
        let h = try await Harness.make()
        guard h.database.sharedAcrossInstances else { return }
        let session = try await h.signUpAndIn()
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller)
        #expect(h.plugin.sessions.count == 0)
        // Another instance signs the session out, straight in the database.
        try await h.database.write { tx in try tx.execute("UPDATE auth_sessions SET revoked_at = 1") }
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller) }
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
    func signInsAndWrongPasswordsLeaveTheCacheAloneAndASignOutEmptiesIt() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        #expect(h.plugin.sessions.count == 1)
        await expectAuthError("InvalidCredentials") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password"))
        }
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"))
        #expect(h.plugin.sessions.count == 1)
        _ = try await h.bus.send(AuthInterface.SignOut(), as: caller)
        #expect(h.plugin.sessions.count == 0)
        await h.database.close()
    }

    @Test func aLookupThatRacedWithAWriteIsNotKept() {
        let cache = SessionCache<String>()
        let before = cache.generation
        cache.invalidate()  // a write committed while the lookup was reading
        cache.store("d", Self.entry("u"), readAt: before)
        #expect(cache.lookup("d") == nil)
        cache.store("d", Self.entry("u"), readAt: cache.generation)
        #expect(cache.lookup("d")?.record == "u")
        cache.invalidate()
        #expect(cache.lookup("d") == nil)
    }

    @Test func theCacheIsBounded() {
        let cache = SessionCache<String>(capacity: 3)
        for i in 0..<10 { cache.store("d\(i)", Self.entry("u\(i)"), readAt: cache.generation) }
        #expect(cache.count <= 3)
        #expect(cache.lookup("d9") != nil)
        let off = SessionCache<String>(capacity: 0)
        off.store("d", Self.entry("u"), readAt: off.generation)
        #expect(off.lookup("d") == nil)
    }
}
