// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Synchronization
import PluginKit
import Testing
import TestSupport
@testable import Auth

/// The one fake, at the provider's network: a provider that publishes a JWK set and mints ID
/// tokens with real keys (P-256 here; the interop suite mints RS256 with another
/// implementation over real HTTPS). Its key document can be rotated or made unreachable.
final class TestIdentityProvider: Sendable {
    struct State {
        var keys: [(id: String, key: P256PrivateKey)]
        var published: [String]
        var reachable = true
        var fetches = 0
        var lifetime: Duration? = .seconds(3600)
    }
    let state: Mutex<State>
    let clock: TestClock

    init(clock: TestClock) throws {
        self.clock = clock
        state = Mutex(State(keys: [("k1", try P256PrivateKey.generate()), ("k2", try P256PrivateKey.generate())], published: ["k1"]))
    }

    /// What AuthPlugin fetches instead of an HTTPS URL.
    var fetch: PublishedKeys.Fetch {
        { [self] _ in
            try self.state.withLock { state in
                state.fetches += 1
                guard state.reachable else { throw HarnessError("unreachable") }
                let keys: [JSONValue] = state.keys.filter { state.published.contains($0.id) }.map { entry in
                    let (x, y) = entry.key.publicPoint
                    return [
                        "kty": "EC", "crv": "P-256", "use": "sig", "kid": .string(entry.id),
                        "x": .string(Base64.encode(x, urlSafe: true)), "y": .string(Base64.encode(y, urlSafe: true)),
                    ]
                }
                return PublishedKeys.Document(body: Array(JSONValue.object(["keys": .array(keys)]).jsonText.utf8), lifetime: state.lifetime)
            }
        }
    }

    var fetches: Int { state.withLock { $0.fetches } }

    /// An ID token as Apple mints one for `subject`, with `changes` applied (nil removes a claim).
    func token(
        _ subject: String = "001234.apple", email: String? = "ada@privaterelay.appleid.com", nonce: String? = "n-1", kid: String = "k1",
        claims changes: [String: JSONValue?] = [:]
    ) throws -> String {
        let now = clock.seconds
        var claims: [String: JSONValue] = [
            "iss": "https://appleid.apple.com", "aud": "com.example.app", "sub": .string(subject), "iat": .int(now), "exp": .int(now + 600),
            "email_verified": "true", "is_private_email": "true",
        ]
        if let email { claims["email"] = .string(email) }
        if let nonce { claims["nonce"] = .string(Self.hash(nonce)) }
        for (name, value) in changes { claims[name] = value }
        let key = try #require(state.withLock { $0.keys.first { $0.id == kid }?.key })
        return try CompactJWS.signES256(header: ["kid": .string(kid), "typ": "JWT"], claims: .object(claims), key: key)
    }

    static func hash(_ nonce: String) -> String {
        Digest.sha256(Array(nonce.utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

extension PluginHarness {
    /// Auth with Apple (and Google, when `google`) configured against `provider`.
    static func withIdentity(
        google: Bool = false, _ configure: @escaping @Sendable (inout AuthService.Options) -> Void = { _ in }
    ) async throws
        -> (PluginHarness, TestIdentityProvider)
    {
        let clock = TestClock()
        let provider = try TestIdentityProvider(clock: clock)
        let h = try await make(clock: clock) { clock in
            var options = AuthService.Options()
            options.scrypt = Scrypt.Parameters(logN: 10, r: 8, p: 1)
            options.identity.apple.audiences = ["com.example.app", "com.example.web"]
            if google { options.identity.google.audiences = ["ios.apps.googleusercontent.com"] }
            configure(&options)
            return [try AuthPlugin(options: options, keyFetch: provider.fetch, clock: { clock.now })]
        }
        return (h, provider)
    }

    func appleSignIn(_ token: String, nonce: String? = "n-1", fullName: String? = nil) async throws -> AuthInterface.IdTokenSession {
        try await bus.send(AuthInterface.SignInWithIdToken(provider: "apple", idToken: token, nonce: nonce, fullName: fullName))
    }

    /// A connection authenticated with `session`.
    func authenticated(_ session: Session) async throws -> Caller {
        let caller = connection()
        _ = try await bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        return caller
    }
}

func expectRefusal(_ refusal: IdTokenRefusal, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected InvalidIdToken(\(refusal))", sourceLocation: sourceLocation)
    } catch let error as AuthError {
        #expect(error == .invalidIdToken(reason: refusal), "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected InvalidIdToken(\(refusal)), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite(.cleansUp) struct IdTokenSignInTests {
    @Test func aValidTokenMakesAnAccountWithoutAPasswordThenSignsInToIt() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        let first = try await h.appleSignIn(try idp.token(), fullName: "Ada Lovelace")
        #expect(first.created)
        #expect(first.session.user.email == "ada@privaterelay.appleid.com")
        #expect(first.session.user.emailVerified, "Apple's \"true\" string and relay addresses are verified emails")
        #expect(first.session.user.displayName == "Ada Lovelace")
        let again = try await h.appleSignIn(try idp.token(email: nil), fullName: nil)
        #expect(!again.created && again.session.user.id == first.session.user.id, "later tokens may omit the email")
        // Signed in, the session works like a password session; the account has no password.
        let caller = try await h.authenticated(again.session)
        let identities = try await h.bus.send(AuthInterface.ListIdentities(), as: caller).identities
        #expect(identities.map(\.provider) == ["apple"] && identities.first?.email == "ada@privaterelay.appleid.com")
        await expectAuthError("InvalidCredentials") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@privaterelay.appleid.com", password: ""))
        }
        await expectAuthError("InvalidCredentials") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@privaterelay.appleid.com", password: "anything at all"))
        }
        let events = try await h.loggedEvents(limit: 100).map(\.topic)
        #expect(events.contains("auth.userSignedUp") && events.contains("auth.identityLinked") && events.filter { $0 == "auth.signedIn" }.count == 2)
    }

    static let claimCases: [(String, JSONValue, IdTokenRefusal)] = [
        ("aud", JSONValue.string("com.other.app"), IdTokenRefusal.audience),
        ("aud", .array(["com.other.app", "com.another.app"]), .audience),
        ("aud", .array(["com.example.app", "com.other.app"]), .authorizedParty),  // several audiences and no azp
        ("azp", .string("com.other.app"), .authorizedParty),
        ("iss", .string("https://evil.example.com"), .issuer),
        ("iss", .string("https://accounts.google.com"), .issuer),  // Google's issuer on an Apple sign-in
        ("exp", .int(1_800_000_000 - 61), .expired),
        ("exp", .string("tomorrow"), .expired),
        ("iat", .int(1_800_000_000 + 120), .issuedInFuture),
        ("nbf", .int(1_800_000_000 + 120), .notYetValid),
        ("sub", .string(""), .subject),
        ("nonce", .string("0000"), .nonceMismatch),
    ]

    @Test(arguments: claimCases)
    func eachClaimCheckRefusesWithItsReason(claim: String, value: JSONValue, refusal: IdTokenRefusal) async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        await expectRefusal(refusal) { _ = try await h.appleSignIn(try idp.token(claims: [claim: value])) }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 0)
    }

    @Test func bothIssuersBothAudiencesAndTheLeewayAreAccepted() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        _ = try await h.appleSignIn(try idp.token("s1", email: "a1@example.com", claims: ["iss": "https://account.apple.com"]))
        _ = try await h.appleSignIn(try idp.token("s2", email: "a2@example.com", claims: ["aud": "com.example.web"]))
        _ = try await h.appleSignIn(try idp.token("s3", email: "a3@example.com", claims: ["aud": .array(["com.example.web", "x"]), "azp": "com.example.web"]))
        _ = try await h.appleSignIn(try idp.token("s4", email: "a4@example.com", claims: ["exp": .int(h.clock.seconds - 30), "iat": .int(h.clock.seconds + 30)]))
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_identities") == 4)
    }

    @Test func theNonceMustBeOnBothSidesOrNeither() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        await expectRefusal(.nonceMissing) { _ = try await h.appleSignIn(try idp.token(nonce: "n-1"), nonce: nil) }
        await expectRefusal(.nonceMissing) { _ = try await h.appleSignIn(try idp.token(nonce: nil), nonce: "n-1") }
        await expectRefusal(.nonceMismatch) { _ = try await h.appleSignIn(try idp.token(nonce: "n-1"), nonce: "n-2") }
        #expect(try await h.appleSignIn(try idp.token(nonce: nil), nonce: nil).created)
        // Off for Google (its iOS SDK's own nonce): any nonce, or none, passes.
        let (g, gidp) = try await PluginHarness.withIdentity(google: true) { $0.identity.google.checkNonce = false }
        let google = try gidp.token(nonce: "sdk-own", claims: ["iss": "https://accounts.google.com", "aud": "ios.apps.googleusercontent.com", "email_verified": true])
        #expect(try await g.bus.send(AuthInterface.SignInWithIdToken(provider: "google", idToken: google, nonce: nil, fullName: nil)).created)
    }

    @Test func signaturesAlgorithmsAndKeysAreChecked() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        let valid = try idp.token()
        let parts = valid.split(separator: ".").map(String.init)
        // The payload changed under the original signature.
        let forgedClaims = Base64.encode(
            Array(
                #"{"iss":"https://appleid.apple.com","aud":"com.example.app","sub":"victim","iat":1800000000,"exp":1800000600,"nonce":"\#(TestIdentityProvider.hash("n-1"))"}"#.utf8
            ), urlSafe: true)
        await expectRefusal(.signature) { _ = try await h.appleSignIn([parts[0], forgedClaims, parts[2]].joined(separator: ".")) }
        // alg none, and HS256 keyed with the published key's coordinates.
        let none = Base64.encode(Array(#"{"alg":"none","kid":"k1"}"#.utf8), urlSafe: true)
        await expectRefusal(.algorithm) { _ = try await h.appleSignIn([none, parts[1], ""].joined(separator: ".")) }
        let hs = Base64.encode(Array(#"{"alg":"HS256","kid":"k1"}"#.utf8), urlSafe: true)
        let mac = Digest.hmacSHA256(key: idp.state.withLock { $0.keys[0].key.publicPoint.x }, data: Array((hs + "." + parts[1]).utf8))
        await expectRefusal(.algorithm) { _ = try await h.appleSignIn([hs, parts[1], Base64.encode(mac, urlSafe: true)].joined(separator: ".")) }
        await expectRefusal(.malformed) { _ = try await h.appleSignIn("not.a.token!") }
        // Signed by a key the provider does not publish (yet): refused, then accepted once rotated in.
        await expectRefusal(.unknownKey) { _ = try await h.appleSignIn(try idp.token(kid: "k2")) }
        idp.state.withLock { $0.published = ["k1", "k2"] }
        h.clock.advance(seconds: 6)  // past the refetch interval
        #expect(try await h.appleSignIn(try idp.token(kid: "k2")).created)
    }

    @Test func unknownKeyIdsRefetchAtMostOncePerInterval() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        _ = try await h.appleSignIn(try idp.token())
        #expect(idp.fetches == 1)
        for _ in 0..<20 { _ = try await h.appleSignIn(try idp.token()) }
        #expect(idp.fetches == 1, "a warm cache makes no network call")
        await expectRefusal(.unknownKey) { _ = try await h.appleSignIn(try idp.token(kid: "k2")) }
        #expect(idp.fetches == 1, "within the interval after a fetch, an unknown key id fetches nothing")
        h.clock.advance(seconds: 6)
        for _ in 0..<20 { await expectRefusal(.unknownKey) { _ = try await h.appleSignIn(try idp.token(kid: "k2")) } }
        #expect(idp.fetches == 2, "forged key ids cannot make appd hammer the provider")
    }

    @Test func theLastGoodKeysServeWhileTheProviderIsDownThenFailClosed() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        await expectAuthError("IdentityProviderUnavailable") {
            idp.state.withLock { $0.reachable = false }
            _ = try await h.appleSignIn(try idp.token())
        }
        idp.state.withLock { $0.reachable = true }
        h.clock.advance(seconds: 6)
        _ = try await h.appleSignIn(try idp.token())
        idp.state.withLock { $0.reachable = false }
        // Warm: no fetch at all. Expired (an hour later): the fetch fails, the last good set serves.
        _ = try await h.appleSignIn(try idp.token())
        h.clock.advance(seconds: 3700)
        _ = try await h.appleSignIn(try idp.token())
        #expect(idp.fetches == 3)
        // A day past expiry with the provider still down: refused rather than trust old keys.
        h.clock.advance(seconds: 24 * 3600 + 60)
        await expectAuthError("IdentityProviderUnavailable") { _ = try await h.appleSignIn(try idp.token()) }
    }

    @Test func theKeysLiveAsLongAsTheProviderSays() {
        #expect(PublishedKeys.lifetime(cacheControl: "public, max-age=21600, must-revalidate", age: "600") == .seconds(21000))
        #expect(PublishedKeys.lifetime(cacheControl: "max-age=100", age: "500") == .zero)
        #expect(PublishedKeys.lifetime(cacheControl: "no-store", age: nil) == .zero)
        #expect(PublishedKeys.lifetime(cacheControl: "private", age: nil) == nil)
        #expect(PublishedKeys.lifetime(cacheControl: nil, age: "5") == nil)
    }

    @Test func anUnconfiguredProviderAndAnUnknownProviderAreRefused() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        await expectAuthError("ProviderNotConfigured") {
            _ = try await h.bus.send(AuthInterface.SignInWithIdToken(provider: "google", idToken: try idp.token(), nonce: "n-1", fullName: nil))
        }
        await expectAuthError("ValidationFailed") {
            _ = try await h.bus.send(AuthInterface.SignInWithIdToken(provider: "facebook", idToken: try idp.token(), nonce: "n-1", fullName: nil))
        }
    }

    @Test func googleHostedDomainsAndBooleanFlags() async throws {
        let (h, idp) = try await PluginHarness.withIdentity(google: true) { $0.identity.google.hostedDomains = ["example.com"] }
        func google(_ changes: [String: JSONValue?]) throws -> String {
            var all: [String: JSONValue?] = ["iss": "accounts.google.com", "aud": "ios.apps.googleusercontent.com", "email_verified": true, "is_private_email": nil]
            for (k, v) in changes { all[k] = v }
            return try idp.token("g-1", email: "grace@example.com", claims: all)
        }
        let send = { (token: String) in
            try await h.bus.send(AuthInterface.SignInWithIdToken(provider: "google", idToken: token, nonce: "n-1", fullName: nil))
        }
        await expectRefusal(.hostedDomain) { _ = try await send(try google(["hd": "gmail.com"])) }
        await expectRefusal(.hostedDomain) { _ = try await send(try google([:])) }
        let signedIn = try await send(try google(["hd": "example.com"]))
        #expect(signedIn.created && signedIn.session.user.emailVerified)
    }
}

@Suite(.cleansUp) struct IdentityLinkingTests {
    @Test func preRegisteringSomeonesEmailWithAPasswordNeverGivesTheirAppleAccount() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        // The attacker signs the victim's address up with a password of their own.
        _ = try await h.bus.send(AuthInterface.SignUp(email: "victim@example.com", password: "attacker's password", displayName: nil))
        await expectAuthError("AccountExistsForEmail") { _ = try await h.appleSignIn(try idp.token("victim.apple", email: "victim@example.com")) }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_identities") == 0)
        // An unverified provider email never links either, even to a verified account.
        let apple = try await h.appleSignIn(try idp.token("owner.apple", email: "owner@example.com"))
        #expect(apple.session.user.emailVerified)
        let google = try idp.token("owner.google", email: "owner@example.com", claims: ["email_verified": "false"])
        await expectAuthError("AccountExistsForEmail") { _ = try await h.appleSignIn(google) }
    }

    /// Security review 2, finding 4, the whole chain: the attacker signs the victim's address up
    /// with a password and keeps the session; the victim follows the verification mail, then
    /// signs in with Apple and is linked into that account. The attacker's session ended at the
    /// verification, the password is dropped at the link, and the victim is told the account's
    /// sign-in methods. (On the old code the attacker's session and password both still worked.)
    @Test func aPreRegisteredAccountIsTheVictimsOnceTheyProveTheAddress() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        let attacker = try await h.signUpAndIn("victim@example.com", password: "attacker's password")
        let attackerCaller = try await h.authenticated(attacker)
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: attackerCaller).user.email == "victim@example.com")
        // The victim follows the mail that came to them.
        let id = try #require(try await EmailVerificationTests().requests(h).last { $0.userId == attacker.user.id }).requestId
        let issued = try await h.bus.send(AuthInterface.IssueVerificationToken(requestId: id), as: EmailVerificationTests().mailer(h))
        _ = try await h.bus.send(AuthInterface.VerifyEmail(verificationToken: issued.verificationToken))
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: try await h.authenticated(attacker)) }
        // The attacker signs in again with the password, then the victim signs in with Apple.
        let again = try await h.bus.send(AuthInterface.SignIn(email: "victim@example.com", password: "attacker's password")).session
        let victim = try await h.appleSignIn(try idp.token("victim.apple", email: "victim@example.com"))
        #expect(!victim.created && victim.session.user.id == attacker.user.id)
        #expect(victim.signInMethods == ["apple"], "the password set before the address was proven is gone: \(String(describing: victim.signInMethods))")
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: try await h.authenticated(again)) }
        await expectAuthError("InvalidCredentials") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "victim@example.com", password: "attacker's password"))
        }
        // The victim's own session works; a password set now (proven address) is kept by a later link.
        let owner = try await h.authenticated(victim.session)
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: owner).user.emailVerified)
    }

    /// A password set after the address was proven is the owner's: linking keeps it, and says so.
    @Test func linkingByEmailKeepsAPasswordSetAfterTheAddressWasProven() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        let session = try await h.signUpAndIn("grace@example.com", password: "first password")
        let id = try #require(try await EmailVerificationTests().requests(h).last { $0.userId == session.user.id }).requestId
        let issued = try await h.bus.send(AuthInterface.IssueVerificationToken(requestId: id), as: EmailVerificationTests().mailer(h))
        let caller = try await h.authenticated(session)
        _ = try await h.bus.send(AuthInterface.VerifyEmail(verificationToken: issued.verificationToken), as: caller)
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: caller).user.emailVerified, "the verifying session itself is kept")
        _ = try await h.bus.send(AuthInterface.ChangePassword(currentPassword: "first password", newPassword: "second password"), as: caller)
        let linked = try await h.appleSignIn(try idp.token("grace.apple", email: "grace@example.com"))
        #expect(linked.signInMethods == ["apple", "password"])
        _ = try await h.bus.send(AuthInterface.SignIn(email: "grace@example.com", password: "second password"))
    }

    @Test func aVerifiedEmailLinksASecondProviderToTheSameAccount() async throws {
        let (h, idp) = try await PluginHarness.withIdentity(google: true)
        let apple = try await h.appleSignIn(try idp.token("a.1", email: "grace@example.com"))
        let token = try idp.token(
            "g.1", email: "Grace@Example.com", claims: ["iss": "https://accounts.google.com", "aud": "ios.apps.googleusercontent.com", "email_verified": true])
        let google = try await h.bus.send(AuthInterface.SignInWithIdToken(provider: "google", idToken: token, nonce: "n-1", fullName: nil))
        #expect(!google.created && google.session.user.id == apple.session.user.id)
        let caller = try await h.authenticated(google.session)
        #expect(try await h.bus.send(AuthInterface.ListIdentities(), as: caller).identities.map(\.provider) == ["apple", "google"])
    }

    @Test func linkAndUnlinkKeepAWayToSignIn() async throws {
        let (h, idp) = try await PluginHarness.withIdentity(google: true)
        let googleToken = { (subject: String, email: String) in
            try idp.token(subject, email: email, claims: ["iss": "https://accounts.google.com", "aud": "ios.apps.googleusercontent.com", "email_verified": true])
        }
        let apple = try await h.appleSignIn(try idp.token("a.1", email: "ada@example.com"))
        let caller = try await h.authenticated(apple.session)
        await expectAuthError("LastSignInMethod") { _ = try await h.bus.send(AuthInterface.UnlinkIdentity(provider: "apple"), as: caller) }
        await expectAuthError("IdentityNotLinked") { _ = try await h.bus.send(AuthInterface.UnlinkIdentity(provider: "google"), as: caller) }
        let linked = try await h.bus.send(AuthInterface.LinkIdentity(provider: "google", idToken: try googleToken("g.1", "ada.g@example.com"), nonce: "n-1"), as: caller)
        #expect(linked.identity.provider == "google" && linked.identity.email == "ada.g@example.com")
        await expectAuthError("ProviderAlreadyLinked") {
            _ = try await h.bus.send(AuthInterface.LinkIdentity(provider: "google", idToken: try googleToken("g.2", "x@example.com"), nonce: "n-1"), as: caller)
        }
        _ = try await h.bus.send(AuthInterface.UnlinkIdentity(provider: "apple"), as: caller)
        await expectAuthError("LastSignInMethod") { _ = try await h.bus.send(AuthInterface.UnlinkIdentity(provider: "google"), as: caller) }
        // The unlinked Apple identity signs in again: the account's email and Apple's are both
        // verified, so it links back to the same account.
        let back = try await h.appleSignIn(try idp.token("a.1", email: "ada@example.com"))
        #expect(!back.created && back.session.user.id == apple.session.user.id)
        // Another account cannot take an identity that is linked.
        let other = try await h.appleSignIn(try idp.token("a.2", email: "bob@example.com"))
        let otherCaller = try await h.authenticated(other.session)
        await expectAuthError("IdentityInUse") {
            _ = try await h.bus.send(AuthInterface.LinkIdentity(provider: "google", idToken: try googleToken("g.1", "ada.g@example.com"), nonce: "n-1"), as: otherCaller)
        }
        let topics = try await h.loggedEvents(limit: 100).map(\.topic)
        #expect(topics.filter { $0 == "auth.identityLinked" }.count == 4 && topics.filter { $0 == "auth.identityUnlinked" }.count == 1)
    }

    @Test func aPasswordAccountLinksAppleAndMayThenUnlinkIt() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        let session = try await h.signUpAndIn("ada@example.com", password: "correct horse")
        let caller = try await h.authenticated(session)
        _ = try await h.bus.send(AuthInterface.LinkIdentity(provider: "apple", idToken: try idp.token("a.9", email: "relay@privaterelay.appleid.com"), nonce: "n-1"), as: caller)
        let viaApple = try await h.appleSignIn(try idp.token("a.9", email: nil))
        #expect(viaApple.session.user.id == session.user.id)
        _ = try await h.bus.send(AuthInterface.UnlinkIdentity(provider: "apple"), as: caller)  // the password remains
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_identities") == 0)
    }

    @Test func deletingWithoutAPasswordNeedsARecentSignInAndErasesTheIdentities() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        let signedIn = try await h.appleSignIn(try idp.token())
        let caller = try await h.authenticated(signedIn.session)
        h.clock.advance(seconds: 301)
        await expectAuthError("ReauthenticationRequired") { _ = try await h.bus.send(AuthInterface.DeleteAccount(password: nil), as: caller) }
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "guess"), as: caller) }
        // A fresh ID-token sign-in is the re-authentication.
        let fresh = try await h.appleSignIn(try idp.token())
        let freshCaller = try await h.authenticated(fresh.session)
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: nil), as: freshCaller)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_identities") == 0)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 0)
        // The same Apple user signing in again gets a new, empty account.
        let again = try await h.appleSignIn(try idp.token())
        #expect(again.created && again.session.user.id != signedIn.session.user.id)
    }

    /// Security review 2, finding 6: a password account deleted without its password within
    /// five minutes of its sign-in (a token stolen in that window erased it). It needs the
    /// password, however fresh the session.
    @Test func aPasswordAccountNeedsItsPasswordToDelete() async throws {
        let (h, _) = try await PluginHarness.withIdentity()
        let session = try await h.signUpAndIn("ada@example.com", password: "correct horse")
        let caller = try await h.authenticated(session)
        await expectAuthError("ReauthenticationRequired") { _ = try await h.bus.send(AuthInterface.DeleteAccount(password: nil), as: caller) }
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "wrong horse"), as: caller) }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 1)
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "correct horse"), as: caller)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 0)
    }

    @Test func concurrentFirstSignInsOfOneIdentityMakeOneAccount() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        let token = try idp.token()
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 { group.addTask { try await h.appleSignIn(token).session.user.id } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 1)
        #expect(idp.fetches == 1, "eight sign-ins on a cold cache wait for one fetch")
    }

    @Test func aDisabledAccountCannotSignInWithItsIdentity() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        _ = try await h.appleSignIn(try idp.token())
        _ = try await h.bus.send(AuthInterface.DisableUser(email: "ada@privaterelay.appleid.com"))
        await expectAuthError("AccountDisabled") { _ = try await h.appleSignIn(try idp.token()) }
    }
}

/// A command that needs a verified email, to exercise the gate.
struct VerifiedOnly: Command {
    static let method = "io.appd.Test.VerifiedOnly"
    static let requirements: [Requirement] = [.session, .verifiedEmail]
    typealias Reply = Empty
}

@Suite(.cleansUp) struct EmailVerificationTests {
    /// The mailer's connection: the `auth.verificationTokens` and `auth.resetTokens` capabilities.
    func mailer(_ h: PluginHarness) -> Caller {
        let connection = ConnectionContext(id: Int.random(in: 1...1_000_000), peer: PeerCredentials(uid: 0, gid: 0, pid: 2))
        connection.pluginScope = PluginScope(
            plugin: "mailer", publishes: [], subscribes: [], calls: ["io.appd.Auth.IssueVerificationToken", "io.appd.Auth.IssueResetToken"],
            capabilities: ["auth.verificationTokens", "auth.resetTokens"])
        return Caller(peer: connection.peer, connection: connection)
    }

    /// The verification requests in the event log, oldest first.
    func requests(_ h: PluginHarness) async throws -> [EmailVerificationRequested] {
        try await h.loggedEvents(limit: 200).compactMap { $0.decode(as: EmailVerificationRequested.self) }
    }

    @Test func signUpAsksForVerificationAndTheMailedTokenVerifiesOnce() async throws {
        let (h, _) = try await PluginHarness.withIdentity { $0.requireVerifiedEmail = false }
        try h.bus.register(VerifiedOnly.self) { _, _ in Empty() }
        let session = try await h.signUpAndIn("ada@example.com", password: "correct horse")
        #expect(!session.user.emailVerified)
        let caller = try await h.authenticated(session)
        await expectAuthError("EmailNotVerified") { _ = try await h.bus.send(VerifiedOnly(), as: caller) }
        let id = try #require(try await requests(h).last { $0.userId == session.user.id }).requestId
        // Nobody but the capability mints the token: not the user, not an admin.
        await expectPermissionDenied { _ = try await h.bus.send(AuthInterface.IssueVerificationToken(requestId: id), as: caller) }
        await expectPermissionDenied { _ = try await h.bus.send(AuthInterface.IssueVerificationToken(requestId: id), as: h.admin) }
        let issued = try await h.bus.send(AuthInterface.IssueVerificationToken(requestId: id), as: mailer(h))
        #expect(issued.email == "ada@example.com")
        // Verified from the app's own session, which the first verification keeps (others end).
        _ = try await h.bus.send(AuthInterface.VerifyEmail(verificationToken: issued.verificationToken), as: caller)
        await expectAuthError("InvalidVerificationToken") { _ = try await h.bus.send(AuthInterface.VerifyEmail(verificationToken: issued.verificationToken)) }
        _ = try await h.bus.send(VerifiedOnly(), as: caller)  // the gate reads the account as it is now
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: caller).user.emailVerified)
        #expect(try await h.loggedEvents(limit: 200).filter { $0.topic == "auth.emailVerified" }.count == 1)
        // A verified account gets no more requests; unknown addresses are answered alike.
        _ = try await h.bus.send(AuthInterface.RequestEmailVerification(email: "ada@example.com"))
        _ = try await h.bus.send(AuthInterface.RequestEmailVerification(email: "nobody@example.com"))
        #expect(try await requests(h).count == 1)
        #expect(!(try await h.everythingStored()).contains(issued.verificationToken), "only the token's digest is stored")
    }

    @Test func requiredVerificationRefusesSignInUntilVerifiedAndResetsCountAsProof() async throws {
        let (h, _) = try await PluginHarness.withIdentity { $0.requireVerifiedEmail = true }
        _ = try await h.bus.send(AuthInterface.SignUp(email: "bo@example.com", password: "correct horse", displayName: nil))
        await expectAuthError("EmailNotVerified") { _ = try await h.bus.send(AuthInterface.SignIn(email: "bo@example.com", password: "correct horse")) }
        // A wrong password still says only that: nothing about verification.
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "bo@example.com", password: "wrong horse")) }
        // Asking again (rate-limited per address) makes a fresh request; its token verifies.
        _ = try await h.bus.send(AuthInterface.RequestEmailVerification(email: "BO@example.com"))
        let requests = try await requests(h)
        #expect(requests.count == 2)
        let issued = try await h.bus.send(AuthInterface.IssueVerificationToken(requestId: requests[1].requestId), as: mailer(h))
        _ = try await h.bus.send(AuthInterface.VerifyEmail(verificationToken: issued.verificationToken))
        #expect(try await h.bus.send(AuthInterface.SignIn(email: "bo@example.com", password: "correct horse")).session.user.emailVerified)
        // The other request's token is void now.
        await expectAuthError("InvalidVerificationToken") {
            _ = try await h.bus.send(AuthInterface.IssueVerificationToken(requestId: requests[0].requestId), as: mailer(h))
        }
    }

    @Test func aPasswordResetVerifiesTheEmailSoAppleCanLinkAfterwards() async throws {
        let (h, idp) = try await PluginHarness.withIdentity()
        _ = try await h.bus.send(AuthInterface.SignUp(email: "victim@example.com", password: "attacker's password", displayName: nil))
        await expectAuthError("AccountExistsForEmail") { _ = try await h.appleSignIn(try idp.token("v.apple", email: "victim@example.com")) }
        // The owner resets the password through the mailbox: the attacker is out, the email verified.
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "victim@example.com"))
        let request = try #require(try await h.loggedEvents(limit: 200).compactMap { $0.decode(as: PasswordResetRequested.self) }.last)
        let issued = try await h.bus.send(AuthInterface.IssueResetToken(requestId: request.requestId), as: mailer(h))
        _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: issued.resetToken, newPassword: "the owner's password"))
        let linked = try await h.appleSignIn(try idp.token("v.apple", email: "victim@example.com"))
        #expect(!linked.created && linked.session.user.emailVerified)
    }
}

func expectPermissionDenied(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected PermissionDenied", sourceLocation: sourceLocation)
    } catch {
        #expect("\(error)".contains("PermissionDenied") || "\(type(of: error))".contains("PermissionDenied"), "\(error)", sourceLocation: sourceLocation)
    }
}

@Suite(.cleansUp) struct GuestAccountTests {
    @Test func guestsAreOffUnlessTurnedOn() async throws {
        let (h, _) = try await PluginHarness.withIdentity()
        await expectAuthError("GuestsDisabled") { _ = try await h.bus.send(AuthInterface.SignInAnonymously()) }
    }

    @Test func aGuestLinkingAppleBecomesThatAccountInPlace() async throws {
        let (h, idp) = try await PluginHarness.withIdentity { $0.guestAccounts = true }
        let guest = try await h.bus.send(AuthInterface.SignInAnonymously()).session
        let caller = try await h.authenticated(guest)
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: caller).user.guest)
        await expectAuthError("IdentityNotLinked") { _ = try await h.bus.send(AuthInterface.UnlinkIdentity(provider: "apple"), as: caller) }
        _ = try await h.bus.send(AuthInterface.LinkIdentity(provider: "apple", idToken: try idp.token(), nonce: "n-1", authorizationCode: nil), as: caller)
        let me = try await h.bus.send(AuthInterface.WhoAmI(), as: caller).user
        #expect(me.id == guest.user.id && !me.guest && me.email == "ada@privaterelay.appleid.com" && me.emailVerified)
        let again = try await h.appleSignIn(try idp.token())
        #expect(!again.created && again.session.user.id == guest.user.id)
        await expectAuthError("NotAGuest") { _ = try await h.bus.send(AuthInterface.UpgradeGuest(email: "x@example.com", password: "correct horse"), as: caller) }
    }

    @Test func upgradingToATakenEmailLooksLikeAnUpgradeAndTheGuestStaysAGuest() async throws {
        let (h, _) = try await PluginHarness.withIdentity { $0.guestAccounts = true }
        _ = try await h.signUpAndIn("ada@example.com", password: "correct horse")
        let guest = try await h.bus.send(AuthInterface.SignInAnonymously()).session
        let caller = try await h.authenticated(guest)
        // A taken address is answered as sign-up answers it (security review 2, finding 7): the
        // reply looks like an upgrade, nothing changes, and the owner is told.
        let decoy = try await h.bus.send(AuthInterface.UpgradeGuest(email: "ADA@example.com", password: "another horse"), as: caller).user
        #expect(decoy.email.lowercased() == "ada@example.com" && !decoy.guest)
        #expect(try await h.loggedEvents(limit: 500).contains { $0.topic == "auth.signUpRepeated" })
        await expectAuthError("ValidationFailed") { _ = try await h.bus.send(AuthInterface.UpgradeGuest(email: "bo@example.com", password: "short"), as: caller) }
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: caller).user.guest)
        // A guest deletes itself without re-authenticating (past the window): its session is all it has.
        h.clock.advance(seconds: 600)
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: nil), as: caller)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 1)
    }

    @Test func administratorsSeeGuestsAndPagingCrossesThem() async throws {
        let (h, _) = try await PluginHarness.withIdentity { $0.guestAccounts = true }
        _ = try await h.signUpAndIn("ada@example.com", password: "correct horse")
        for _ in 0..<3 { _ = try await h.bus.send(AuthInterface.SignInAnonymously()) }
        _ = try await h.signUpAndIn("zed@example.com", password: "correct horse")
        var seen: [AccountSummary] = []
        var cursor: String?
        repeat {
            let page = try await h.bus.send(AuthInterface.ListUsers(cursor: cursor, limit: 2))
            seen += page.users
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen.count == 5 && Set(seen.map(\.id)).count == 5)
        #expect(seen.filter(\.guest).allSatisfy { $0.email == "" } && seen.filter(\.guest).count == 3)
    }

    @Test func aRefreshKeepsAGuestAliveAndIdleOnesGo() async throws {
        let (h, _) = try await PluginHarness.withIdentity { $0.guestAccounts = true }
        let active = try await h.bus.send(AuthInterface.SignInAnonymously()).session
        _ = try await h.bus.send(AuthInterface.SignInAnonymously())
        h.clock.advance(seconds: 20 * 86_400)
        _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: active.refreshToken))
        h.clock.advance(seconds: 11 * 86_400)
        let auth = h.plugin(AuthPlugin.self)
        let sweep = GuestSweepService(
            repository: auth.service(h.database).repository, clock: { h.clock.now }, idle: .seconds(30 * 86_400), interval: .seconds(3600),
            logger: Logger(label: "test"))
        #expect(try await sweep.sweep() == 1)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users WHERE id = '\(active.user.id)'") == 1)
        #expect(try await h.loggedEvents(limit: 100).filter { $0.topic == "auth.accountDeleted" }.count == 1)
    }
}

@Suite(.cleansUp) struct SignUpSessionTests {
    @Test func signUpSignsInAndATakenEmailGetsADecoyOfTheSameShape() async throws {
        let (h, _) = try await PluginHarness.withIdentity()
        let first = try await h.bus.send(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse", displayName: nil))
        let session = try #require(first.session)
        #expect(session.user.id == first.user.id)
        _ = try await h.authenticated(session)  // a real session: it works at once
        let again = try await h.bus.send(AuthInterface.SignUp(email: "ADA@example.com", password: "another horse", displayName: nil))
        let decoy = try #require(again.session, "the same shape as a new account's reply")
        #expect(again.user.id != first.user.id && decoy.user.id == again.user.id)
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: decoy.accessToken)) }
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: decoy.refreshToken)) }
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_sessions") == 1, "the decoy was never stored")
    }

    @Test func withVerificationRequiredSignUpOpensNoSession() async throws {
        let (h, _) = try await PluginHarness.withIdentity { $0.requireVerifiedEmail = true }
        let reply = try await h.bus.send(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse", displayName: nil))
        #expect(reply.session == nil)
        let taken = try await h.bus.send(AuthInterface.SignUp(email: "ada@example.com", password: "another horse", displayName: nil))
        #expect(taken.session == nil)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_sessions") == 0)
    }
}
