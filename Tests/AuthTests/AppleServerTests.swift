// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP
import Synchronization
import PluginKit
import Testing
import TestSupport
@testable import Auth

/// Apple's token and revoke endpoints as the test provider's network: records each POST and
/// answers as Apple does. The client secret in every POST is checked as Apple would (ES256
/// with the team's key, iss/sub/aud).
final class TestAppleEndpoints: Sendable {
    struct State {
        var posts: [(url: String, form: [String: String])] = []
        var revokeStatus = 200
        var tokenStatus = 200
        var issued = 0
    }
    let state = Mutex(State())
    /// The Apple user the codes belong to.
    let subject: String

    init(subject: String = "001234.apple") throws {
        self.subject = subject
    }

    var post: AppleClient.Post {
        { [self] url, form in
            let fields = Dictionary(form, uniquingKeysWith: { $1 })
            return self.state.withLock { state -> (status: Int, body: [UInt8]) in
                state.posts.append((url, fields))
                if url.hasSuffix("/token") {
                    guard state.tokenStatus == 200 else { return (state.tokenStatus, Array(#"{"error":"invalid_grant"}"#.utf8)) }
                    state.issued += 1
                    let idToken =
                        Base64.encode(Array(#"{"alg":"RS256","kid":"x"}"#.utf8), urlSafe: true) + "." + Base64.encode(Array(#"{"sub":"\#(self.subject)"}"#.utf8), urlSafe: true)
                        + ".AA"
                    return (200, Array(#"{"access_token":"a","refresh_token":"r.secret.\#(state.issued)","id_token":"\#(idToken)","expires_in":3600}"#.utf8))
                }
                return (state.revokeStatus, Array((state.revokeStatus == 200 ? "" : #"{"error":"server_error"}"#).utf8))
            }
        }
    }

    var posts: [(url: String, form: [String: String])] { state.withLock { $0.posts } }
}

/// A P-256 key made by openssl, in the PKCS#8 PEM form of Apple's .p8 files.
let appleP8 = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg+NC9BpDDvH1juZx5
    0Ovgbfz8EzCRVquGfgCz7s8DeqmhRANCAATN9vCnjX8a40oq1MpScADV3/zNX+F0
    CrcAVkcpo7eUEZMTuAiczmlhwJ3VgEpM+MopC+CkSDVNbP+yBzJXGxsM
    -----END PRIVATE KEY-----
    """

extension PluginHarness {
    /// Auth with Apple's server side against `endpoints`.
    static func withAppleServer(_ endpoints: TestAppleEndpoints) async throws -> (PluginHarness, TestIdentityProvider, AuthPlugin) {
        let clock = TestClock()
        let provider = try TestIdentityProvider(clock: clock)
        let h = try await make(clock: clock) { clock in
            var options = AuthService.Options()
            options.scrypt = Scrypt.Parameters(logN: 10, r: 8, p: 1)
            options.identity.apple.audiences = ["com.example.app"]
            options.identity.appleServer = AppleServerSettings(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: appleP8, clientID: "com.example.app")
            options.identity.tokenEncryptionKey = [UInt8](repeating: 9, count: 32)
            return [try AuthPlugin(options: options, keyFetch: provider.fetch, applePost: endpoints.post, clock: { clock.now })]
        }
        return (h, provider, h.plugin(AuthPlugin.self))
    }

    func revocationService(_ plugin: AuthPlugin) throws -> TokenRevocationService {
        let apple = try #require(plugin.apple)
        return TokenRevocationService(
            repository: plugin.service(database).repository, apple: apple, clock: { self.clock.now }, interval: .seconds(1), logger: Logger(label: "test"))
    }
}

@Suite(.cleansUp) struct AppleServerTests {
    @Test func theCodeIsExchangedWithASignedClientSecretAndTheTokenKeptSealed() async throws {
        let apple = try TestAppleEndpoints()
        let (h, idp, _) = try await PluginHarness.withAppleServer(apple)
        _ = try await h.bus.send(AuthInterface.SignInWithIdToken(provider: "apple", idToken: try idp.token(), nonce: "n-1", fullName: nil, authorizationCode: "c.one"))
        let post = try #require(apple.posts.first)
        #expect(post.url == "https://appleid.apple.com/auth/token")
        #expect(post.form["grant_type"] == "authorization_code" && post.form["code"] == "c.one" && post.form["client_id"] == "com.example.app")
        // The client secret: ES256 under the team's key, as Apple checks it.
        let secret = try CompactJWS(try #require(post.form["client_secret"]))
        #expect(secret.algorithm == "ES256" && secret.keyID == "KEY1234567")
        #expect(try P256PrivateKey(pem: appleP8).publicKey.verify(signature: secret.signature, message: secret.signingInput))
        let claims = try secret.claims()
        #expect(claims["iss"] == "TEAM123456" && claims["sub"] == "com.example.app" && claims["aud"] == "https://appleid.apple.com")
        let stored = try await h.database.read { try $0.query("SELECT refresh_token FROM auth_identities").first?.text("refresh_token") }
        let sealed = try #require(stored)
        #expect(!sealed.contains("r.secret"), "sealed, not plain")
        let opened = try AESGCM(key: [UInt8](repeating: 9, count: 32)).open(try #require(Base64.decode(sealed)), associatedData: AuthService.tokenContext)
        #expect(opened.map { String(decoding: $0, as: UTF8.self) } == "r.secret.1")
        #expect(try await h.everythingStored().contains("r.secret") == false, "no byte of the database holds the token in the clear")
    }

    @Test func deletingTheAccountRevokesAppleTokenEvenWhenAppleIsDownAtFirst() async throws {
        let apple = try TestAppleEndpoints()
        let (h, idp, plugin) = try await PluginHarness.withAppleServer(apple)
        let signedIn = try await h.bus.send(
            AuthInterface.SignInWithIdToken(provider: "apple", idToken: try idp.token(), nonce: "n-1", fullName: nil, authorizationCode: "c.one"))
        let caller = try await h.authenticated(signedIn.session)
        apple.state.withLock { $0.revokeStatus = 503 }
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: nil), as: caller)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 0, "deletion does not wait for Apple")
        let service = try h.revocationService(plugin)
        #expect(try await service.revokeDue() == 0)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_token_revocations WHERE attempts = 1") == 1, "kept for a retry")
        #expect(try await service.revokeDue() == 0, "not due again before its backoff")
        apple.state.withLock { $0.revokeStatus = 200 }
        h.clock.advance(seconds: 31)
        #expect(try await service.revokeDue() == 1)
        let revoke = try #require(apple.posts.last)
        #expect(revoke.url == "https://appleid.apple.com/auth/revoke" && revoke.form["token"] == "r.secret.1" && revoke.form["token_type_hint"] == "refresh_token")
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_token_revocations") == 0)
    }

    @Test func unlinkingRevokesAndANewCodeReplacesTheOldToken() async throws {
        let apple = try TestAppleEndpoints()
        let (h, idp, plugin) = try await PluginHarness.withAppleServer(apple)
        let session = try await h.signUpAndIn("ada@example.com", password: "correct horse")
        let caller = try await h.authenticated(session)
        _ = try await h.bus.send(
            AuthInterface.LinkIdentity(provider: "apple", idToken: try idp.token(email: "ada@example.com"), nonce: "n-1", authorizationCode: "c.1"), as: caller)
        _ = try await h.bus.send(
            AuthInterface.SignInWithIdToken(provider: "apple", idToken: try idp.token(), nonce: "n-1", fullName: nil, authorizationCode: "c.2"))
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_token_revocations") == 1, "the replaced token is queued")
        _ = try await h.bus.send(AuthInterface.UnlinkIdentity(provider: "apple"), as: caller)
        #expect(try await h.revocationService(plugin).revokeDue() == 2)
        #expect(Set(apple.posts.filter { $0.url.hasSuffix("/revoke") }.compactMap { $0.form["token"] }) == ["r.secret.1", "r.secret.2"])
    }

    @Test func aFailedExchangeDoesNotFailTheSignIn() async throws {
        let apple = try TestAppleEndpoints()
        apple.state.withLock { $0.tokenStatus = 400 }
        let (h, idp, _) = try await PluginHarness.withAppleServer(apple)
        let signedIn = try await h.bus.send(
            AuthInterface.SignInWithIdToken(provider: "apple", idToken: try idp.token(), nonce: "n-1", fullName: nil, authorizationCode: "c.bad"))
        #expect(signedIn.created)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_identities WHERE refresh_token IS NULL") == 1)
    }

    @Test func aCodeForAnotherAppleUserIsNotKept() async throws {
        let apple = try TestAppleEndpoints(subject: "someone.else")
        let (h, idp, _) = try await PluginHarness.withAppleServer(apple)
        _ = try await h.bus.send(AuthInterface.SignInWithIdToken(provider: "apple", idToken: try idp.token(), nonce: "n-1", fullName: nil, authorizationCode: "c"))
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_identities WHERE refresh_token IS NULL") == 1)
    }
}

@Suite(.cleansUp) struct AppleNotificationTests {
    func notification(_ idp: TestIdentityProvider, type: String, subject: String = "001234.apple", time: Int = 1) throws -> [UInt8] {
        let events = #"{"type":"\#(type)","sub":"\#(subject)","event_time":\#(time)}"#
        let jws = try CompactJWS.signES256(
            header: ["kid": "k1"], claims: ["iss": "https://appleid.apple.com", "aud": "com.example.app", "iat": .int(idp.clock.seconds), "events": .string(events)],
            key: idp.state.withLock { $0.keys[0].key })
        return Array(JSONValue.object(["payload": .string(jws)]).jsonText.utf8)
    }

    func deliver(_ plugin: AuthPlugin, _ h: PluginHarness, _ body: [UInt8]) async -> HTTPResponse {
        // Through the route the plugin declares, as the HTTP API resolves it.
        let request = HTTPServerRequest(method: "POST", target: "/webhooks/apple")
        guard let route = PluginHTTPRoute.resolve(request.path, in: plugin.httpRoutes(h.context)) else {
            Issue.record("auth declares no /webhooks/apple route")
            return HTTPResponse.refusal(404, "NotFound", reason: "no route")
        }
        return await route.handler(request, body)
    }

    @Test func consentRevokedUnlinksEndsAppleSessionsOnlyAndActsOnce() async throws {
        let apple = try TestAppleEndpoints()
        let (h, idp, plugin) = try await PluginHarness.withAppleServer(apple)
        let password = try await h.signUpAndIn("ada@example.com", password: "correct horse")
        let passwordCaller = try await h.authenticated(password)
        _ = try await h.bus.send(
            AuthInterface.LinkIdentity(provider: "apple", idToken: try idp.token(email: "ada@example.com"), nonce: "n-1", authorizationCode: "c"), as: passwordCaller)
        let viaApple = try await h.appleSignIn(try idp.token())
        let body = try notification(idp, type: "consent-revoked")
        #expect(await deliver(plugin, h, body).status == 200)
        let again = await deliver(plugin, h, body)
        #expect(again.status == 200 && (try? JSONParser.parse(again.body))?["duplicate"] == .bool(true), "a redelivery acts once")
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_identities") == 0)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_token_revocations") == 1)
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: viaApple.session.accessToken)) }
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: passwordCaller)  // the password session lives on
        #expect(try await h.loggedEvents(limit: 100).filter { $0.topic == "auth.identityUnlinked" }.count == 1)
    }

    @Test func accountDeleteDeletesAnAppleOnlyAccountOnce() async throws {
        let apple = try TestAppleEndpoints()
        let (h, idp, plugin) = try await PluginHarness.withAppleServer(apple)
        _ = try await h.bus.send(AuthInterface.SignInWithIdToken(provider: "apple", idToken: try idp.token(), nonce: "n-1", fullName: nil, authorizationCode: "c"))
        let body = try notification(idp, type: "account-delete")
        #expect(await deliver(plugin, h, body).status == 200)
        #expect(await deliver(plugin, h, body).status == 200)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 0)
        #expect(try await h.loggedEvents(limit: 100).filter { $0.topic == "auth.accountDeleted" }.count == 1)
    }

    @Test func emailForwardingFlagsAndRefusals() async throws {
        let apple = try TestAppleEndpoints()
        let (h, idp, plugin) = try await PluginHarness.withAppleServer(apple)
        let signedIn = try await h.appleSignIn(try idp.token())
        let caller = try await h.authenticated(signedIn.session)
        #expect(await deliver(plugin, h, try notification(idp, type: "email-disabled", time: 1)).status == 200)
        #expect(try await h.bus.send(AuthInterface.ListIdentities(), as: caller).identities.first?.emailForwarding == false)
        #expect(await deliver(plugin, h, try notification(idp, type: "email-enabled", time: 2)).status == 200)
        #expect(try await h.bus.send(AuthInterface.ListIdentities(), as: caller).identities.first?.emailForwarding == true)
        // Signed by a key Apple does not publish, or not JSON: refused.
        let forged = try CompactJWS.signES256(
            header: ["kid": "k2"], claims: ["iss": "https://appleid.apple.com", "aud": "com.example.app", "events": #"{"type":"account-delete","sub":"001234.apple"}"#],
            key: idp.state.withLock { $0.keys[1].key })
        #expect(await deliver(plugin, h, Array(JSONValue.object(["payload": .string(forged)]).jsonText.utf8)).status == 401)
        #expect(await deliver(plugin, h, Array("nope".utf8)).status == 400)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM auth_users") == 1)
    }
}
