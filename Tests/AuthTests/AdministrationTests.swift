// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage
import Testing
import TestSupport

@testable import Auth

/// What the console's users page (and appctl call) does with accounts: search by email, one
/// account with its identities, deletion by an administrator — admin only, like the rest.
@Suite(.cleansUp) struct AdministrationTests {
    @Test func searchFindsByAnyPartOfTheEmailInAnyCase() async throws {
        let h = try await PluginHarness.make()
        for email in ["ada@example.com", "bob@example.com", "bobby_t@example.org", "b%b@example.net"] {
            _ = try await h.bus.send(AuthInterface.SignUp(email: email, password: "password \(email)", displayName: nil))
        }
        func search(_ text: String?, limit: Int? = nil, cursor: String? = nil) async throws -> AuthInterface.UserPage {
            try await h.bus.send(AuthInterface.ListUsers(cursor: cursor, limit: limit, search: text), as: h.admin)
        }
        #expect(try await search("BOB").users.map(\.email) == ["bob@example.com", "bobby_t@example.org"])
        #expect(try await search("example.org").users.map(\.email) == ["bobby_t@example.org"])
        // LIKE's own characters match as themselves: '_' is no wildcard, '%' no "anything".
        #expect(try await search("y_t").users.map(\.email) == ["bobby_t@example.org"])
        #expect(try await search("b_b").users.isEmpty)
        #expect(try await search("%").users.map(\.email) == ["b%b@example.net"])
        #expect(try await search("  ").users.count == 4, "blank is no filter")
        // Pages of a search go on from the cursor.
        let first = try await search("b", limit: 2)
        #expect(first.users.count == 2 && first.nextCursor != nil)
        let second = try await search("b", limit: 2, cursor: first.nextCursor)
        #expect(Set(first.users.map(\.email) + second.users.map(\.email)) == ["bob@example.com", "bobby_t@example.org", "b%b@example.net"])
        await expectAuthError("ValidationFailed") { _ = try await search(String(repeating: "x", count: 300)) }
    }

    @Test func oneAccountWithItsIdentities() async throws {
        let (h, idp) = try await PluginHarness.withIdentity(google: true)
        _ = try await h.appleSignIn(try idp.token("a.1", email: "ada@example.com"))
        let detail = try await h.bus.send(AuthInterface.GetUser(email: "ADA@example.com"), as: h.admin)
        #expect(detail.user.email == "ada@example.com" && !detail.user.disabled)
        #expect(detail.identities.map(\.provider) == ["apple"] && detail.identities.first?.email == "ada@example.com")
        await expectAuthError("NotFound") { _ = try await h.bus.send(AuthInterface.GetUser(email: "nobody@example.com"), as: h.admin) }
    }

    @Test func anAdministratorDeletesAnAccountAsItsOwnerWould() async throws {
        let h = try await PluginHarness.make()
        let session = try await h.signUpAndIn("ada@example.com")
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        _ = try await h.bus.send(AuthInterface.DeleteUser(email: "Ada@Example.com"), as: h.admin)
        let log = try await h.loggedEvents(limit: 100)
        #expect(log.last?.topic == "auth.accountDeleted")
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller) }
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse")) }
        await expectAuthError("NotFound") { _ = try await h.bus.send(AuthInterface.DeleteUser(email: "ada@example.com"), as: h.admin) }
    }

    @Test func theyAreForAdminsOnly() async throws {
        let h = try await PluginHarness.make()
        _ = try await h.signUpAndIn("ada@example.com")
        let stranger = Caller(peer: PeerCredentials(uid: 4242, gid: 4242, pid: 1))
        for send in [
            { _ = try await h.bus.send(AuthInterface.GetUser(email: "ada@example.com"), as: stranger) },
            { _ = try await h.bus.send(AuthInterface.DeleteUser(email: "ada@example.com"), as: stranger) },
            { _ = try await h.bus.send(AuthInterface.ListUsers(search: "ada"), as: stranger) },
        ] as [() async throws -> Void] {
            await #expect(throws: PermissionDenied.self) { try await send() }
        }
        #expect(try await h.bus.send(AuthInterface.GetUser(email: "ada@example.com"), as: h.admin).user.email == "ada@example.com")
    }
}
