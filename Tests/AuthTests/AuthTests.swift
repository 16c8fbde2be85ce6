// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Glibc
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth

/// A command that needs an onboarded account, to exercise the onboarding gate.
struct OnboardedOnly: Command {
    static let method = "io.appd.Test.OnboardedOnly"
    static let requirements: [Requirement] = [.session, .onboarded]
    typealias Reply = Empty
}

typealias Harness = PluginHarness

extension PluginHarness {
    /// Auth wired as appd wires it, on the harness's clock, plus a command behind the
    /// onboarding gate.
    static func make() async throws -> PluginHarness {
        let h = try await make { clock in [try AuthPlugin.testing(clock: clock)] }
        try h.bus.register(OnboardedOnly.self) { _, _ in Empty() }
        return h
    }

    var plugin: AuthPlugin { plugin(AuthPlugin.self) }

    func signUpAndIn(_ email: String = "Ada@Example.COM", password: String = "correct horse") async throws -> Session {
        _ = try await bus.send(AuthInterface.SignUp(email: email, password: password, displayName: "Ada"))
        return try await bus.send(AuthInterface.SignIn(email: email, password: password)).session
    }
}

func expectAuthError(_ kind: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(kind)", sourceLocation: sourceLocation)
    } catch let error as AuthError {
        #expect(error.wireName == "io.appd.Auth.\(kind)", "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(kind), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite(.cleansUp) struct AuthValidationTests {
    @Test(arguments: [
        ("", "email"), ("no-at-sign", "email"), ("a@b", "email"), ("two@@example.com", "email"), ("a b@example.com", "email"),
        ("@example.com", "email"), ("a@-example.com", "email"),
        // Refused characters, in an ASCII address (scanned by byte) and in others (by character).
        ("a<b@example.com", "email"), ("ada,bob@example.com", "email"), ("zoë bob@example.com", "email"), ("zoë\u{a0}@example.com", "email"),
        ("ada\u{2028}@example.com", "email"),
        // Hardening findings 10 and 11: terminal escapes and NUL.
        ("ada\u{1b}[2J@example.com", "email"), ("ada@example.com\u{7}", "email"), ("alice@example.com\u{0}junk", "email"),
    ])
    func badEmailsNameTheField(email: String, field: String) async throws {
        do {
            _ = try AuthValidation.email(email)
            Issue.record("accepted \(email)")
        } catch {
            guard case .validationFailed(let named, _) = error else { Issue.record("\(error)"); return }
            #expect(named == field)
        }
    }

    /// Trimmed, domain lower-cased, the name part kept as typed: by the byte path (ASCII) and
    /// the character path alike.
    @Test(arguments: [
        ("  Ada@Example.COM\t", "Ada@example.com"), ("a.b+tag@Sub.Example.co", "a.b+tag@sub.example.co"), ("x@a-b.c", "x@a-b.c"),
        ("Zoë@Exämple.COM", "Zoë@exämple.com"), ("zoë@example.com", "zoë@example.com"),
    ])
    func goodEmailsAreNormalised(email: String, normalised: String) throws {
        #expect(try AuthValidation.email(email) == normalised)
    }

    /// The byte path gives the message the character path gives, for each rule.
    @Test(arguments: ["@example.com", "ada@", "a@@example.com", "a b@example.com", "ada@example", "ada@-example.com", "ada@example-.com", "ada@example..com"])
    func asciiAndUnicodeAddressesFailAlike(email: String) {
        func reason(_ address: String) -> AuthError? {
            do {
                _ = try AuthValidation.email(address)
                return nil
            } catch {
                return error
            }
        }
        // The same address with a non-ASCII name part takes the character path.
        let unicode = email.hasPrefix("@") ? email : "é" + email
        #expect(reason(email) != nil)
        #expect(reason(email) == reason(unicode))
    }

    /// The byte path (in place, copying only to lower a domain's capitals) agrees with the
    /// character path on every ASCII address: the same address or the same error, over random
    /// strings of the characters the rules look at.
    @Test func theBytePathAgreesWithTheCharacterPathOnRandomAddresses() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aZz09.-@ <>,+_.@..--")
        var accepted = 0
        for round in 0..<20_000 {
            let length = round < 100 ? 60 + round : Int.random(in: 1...24, using: &generator)
            var address = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            if round % 4 == 0 { address = String("ab.C-d@Ex-Am.ple.COM".prefix(Int.random(in: 0...20, using: &generator))) + address }
            let bytePath = Result(catching: { () throws(AuthError) in try AuthValidation.asciiEmail(address) })
            let characterPath = Result(catching: { () throws(AuthError) in try AuthValidation.characterEmail(address) })
            #expect(bytePath == characterPath, "\(address)")
            if case .success = bytePath { accepted += 1 }
        }
        #expect(accepted > 0, "some random addresses pass, so both outcomes are compared")
    }

    @Test func passwordsEqualToTheEmailIgnoringCaseAreFoundWithoutCopies() {
        let pairs: [(String, String, Bool)] = [
            ("Ada@Example.com", "ada@example.com", true), ("ada@example.con", "ada@example.com", false), ("ada@example.co", "ada@example.com", false),
            ("[ada]@example.com", "{ada}@example.com", false), ("ÄDA@example.com", "äda@example.com", true), ("İ", "i̇", true), ("", "", true),
        ]
        for (a, b, same) in pairs {
            #expect(AuthValidation.sameIgnoringCase(a, b) == same, "\(a) \(b)")
            #expect(AuthValidation.sameIgnoringCase(a, b) == (a.lowercased() == b.lowercased()), "\(a) \(b)")
        }
        for _ in 0..<5_000 {
            let a = String((0..<Int.random(in: 0...6)).map { _ in Character(Unicode.Scalar(UInt8.random(in: 32...126))) })
            let b = Bool.random() ? String(a.map { Bool.random() ? Character($0.uppercased()) : $0 }) : String(a.shuffled())
            #expect(AuthValidation.sameIgnoringCase(a, b) == (a.lowercased() == b.lowercased()), "\(a) \(b)")
        }
    }

    /// The first hour: appctl signup checks the password before asking for it twice.
    @Test func checkSignUpAppliesTheRulesWithoutCreatingAnything() async throws {
        let h = try await Harness.make()
        await expectAuthError("ValidationFailed") { _ = try await h.bus.send(AuthInterface.CheckSignUp(email: "ada@example.com", password: "short")) }
        await expectAuthError("ValidationFailed") { _ = try await h.bus.send(AuthInterface.CheckSignUp(email: "not-an-email", password: "long enough pass")) }
        _ = try await h.bus.send(AuthInterface.CheckSignUp(email: "ada@example.com", password: "long enough pass"))
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "long enough pass")) }
    }

    @Test func displayNamesRefuseControlCharacters() {
        #expect(throws: AuthError.validation("displayName", "contains a control character (such as a terminal escape)")) {
            try AuthValidation.displayName("Ada\u{1b}]0;pwned\u{7}")
        }
        #expect((try? AuthValidation.displayName("Ada Lovelace ☕")) == "Ada Lovelace ☕")
    }

    @Test func emailsAreTrimmedAndTheDomainLowerCased() throws {
        #expect(try AuthValidation.email("  Ada.Lovelace@Example.COM \n") == "Ada.Lovelace@example.com")
    }

    @Test func passwordRules() {
        #expect(throws: AuthError.validation("password", "needs at least 8 characters")) { try AuthValidation.password("short", email: "a@b.co") }
        #expect(throws: AuthError.validation("password", "is longer than 1024 bytes")) {
            try AuthValidation.password(String(repeating: "x", count: 1025), email: "a@b.co")
        }
        #expect(throws: AuthError.validation("password", "must not be the email address")) {
            try AuthValidation.password("Ada@example.com", email: "ada@example.com")
        }
    }
}

@Suite(.cleansUp) struct AuthFlowTests {
    @Test func signUpSignInAuthenticateAndWhoAmI() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        #expect(session.user.email == "Ada@example.com")
        let caller = h.connection()
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller) }
        let user = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller).user
        #expect(user.id == session.user.id)
        // The token is attached to the connection: later calls need not carry it.
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: caller).user.email == "Ada@example.com")
    }

    /// Hardening finding 11: text was bound up to its first NUL, so this signed in as alice.
    @Test func anEmailWithANulInsideIsNotAnotherAccount() async throws {
        let h = try await Harness.make()
        _ = try await h.bus.send(AuthInterface.SignUp(email: "alice@example.com", password: "correct horse", displayName: nil))
        await expectAuthError("InvalidCredentials") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "alice@example.com\u{0}junk", password: "correct horse"))
        }
    }

    /// Security review finding 10: a taken email (any case) is answered as a new account would
    /// be; nothing is created, the owner is told once an hour, and signing in still needs the
    /// owner's password.
    @Test func aTakenEmailIsAnsweredAsANewOneAndItsOwnerIsTold() async throws {
        let h = try await Harness.make()
        let repeated = try h.bus.subscribe("auth.signUpRepeated")
        let first = try await h.bus.send(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse", displayName: nil)).user
        let again = try await h.bus.send(AuthInterface.SignUp(email: "ADA@EXAMPLE.com", password: "another one", displayName: "Eve")).user
        #expect(again.id != first.id && again.email.lowercased() == "ada@example.com" && again.displayName == "Eve" && !again.onboarded, "\(again)")
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "another one")) }
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"))
        var events = repeated.makeAsyncIterator()
        let told = try #require(await events.next()?.json())
        #expect(told["userId"]?.stringValue == first.id && told["email"]?.stringValue == "ada@example.com")
        // Within the hour, more repeats tell the owner nothing new; after it, once again.
        _ = try await h.bus.send(AuthInterface.SignUp(email: "ada@example.com", password: "third try!", displayName: nil))
        h.clock.advance(seconds: 3601)
        _ = try await h.bus.send(AuthInterface.SignUp(email: "ada@example.com", password: "fourth try", displayName: nil))
        let logged = try await h.loggedEvents(limit: 100).filter { $0.topic == "auth.signUpRepeated" }
        #expect(logged.count == 2)
        let users = try await h.bus.send(AuthInterface.ListUsers(cursor: nil, limit: nil), as: h.admin).users
        #expect(users.count == 1)
    }

    /// Security review finding 11: five wrong passwords from one address slow that address
    /// down, not the owner signing in from elsewhere; an IPv6 /64 counts as one address.
    @Test func wrongPasswordsFromElsewhereDoNotLockTheOwnerOut() async throws {
        let h = try await Harness.make()
        _ = try await h.signUpAndIn()
        let attacker = Caller(remoteAddress: "2001:db8:5:6::1"), owner = Caller(remoteAddress: "198.51.100.7")
        for i in 0..<5 {
            await expectAuthError("InvalidCredentials") {
                _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password"), as: Caller(remoteAddress: "2001:db8:5:6::\(i + 1)"))
            }
        }
        await expectAuthError("TooManyAttempts") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"), as: attacker) }
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"), as: owner)
    }

    /// Security review 2, finding 9: 21 addresses x 5 guesses pass the account-wide allowance
    /// (100) and slowed every attempt on the account, the owner's too. Now a new address waits,
    /// but the owner signing in from an address they signed in from before gets in.
    @Test func distributedGuessingCannotLockTheOwnerOutFromAKnownAddress() async throws {
        let h = try await Harness.make()
        _ = try await h.signUpAndIn()
        let owner = Caller(remoteAddress: "198.51.100.7")
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"), as: owner)
        for address in 1...21 {
            for _ in 0..<5 {
                let guesser = Caller(remoteAddress: "203.0.113.\(address)")
                do {
                    _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password"), as: guesser)
                } catch let error as AuthError where error.wireName == "io.appd.Auth.InvalidCredentials" || error.wireName == "io.appd.Auth.TooManyAttempts" {}
            }
        }
        await expectAuthError("TooManyAttempts") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"), as: Caller(remoteAddress: "192.0.2.99"))
        }
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"), as: owner)
    }

    /// Security review finding 4: ChangePassword and DeleteAccount check the password under the
    /// sign-in throttle (a stolen access token is no unthrottled password oracle).
    @Test func changePasswordAndDeleteAccountAreThrottledLikeSignIn() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let thief = Caller(sessionToken: SessionToken(session.accessToken), remoteAddress: "203.0.113.9")
        for _ in 0..<5 {
            await expectAuthError("InvalidCredentials") {
                _ = try await h.bus.send(AuthInterface.ChangePassword(currentPassword: "guess one", newPassword: "a new password"), as: thief)
            }
        }
        await expectAuthError("TooManyAttempts") { _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "correct horse"), as: thief) }
        await expectAuthError("TooManyAttempts") {
            _ = try await h.bus.send(AuthInterface.ChangePassword(currentPassword: "correct horse", newPassword: "a new password"), as: thief)
        }
        // The same address's sign-ins wait too; the owner elsewhere is not held up.
        await expectAuthError("TooManyAttempts") {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"), as: Caller(remoteAddress: "203.0.113.9"))
        }
        let owner = Caller(sessionToken: SessionToken(session.accessToken), remoteAddress: "198.51.100.7")
        _ = try await h.bus.send(AuthInterface.ChangePassword(currentPassword: "correct horse", newPassword: "a new password"), as: owner)
    }

    /// Security review finding 13: reset requests are recorded at most three an hour per
    /// address, and the reply is the same whether or not the address has an account.
    @Test func resetRequestsAreLimitedPerAddress() async throws {
        let h = try await Harness.make()
        _ = try await h.signUpAndIn()
        // Any case is the same address.
        for n in 0..<10 { _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: n % 2 == 0 ? "ada@example.com" : "ADA@Example.COM")) }
        for _ in 0..<10 { _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "nobody@example.com")) }
        var logged = try await h.loggedEvents(limit: 100).filter { $0.topic == "auth.passwordResetRequested" }
        #expect(logged.count == 3)
        h.clock.advance(seconds: 3601)
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "ADA@example.com"))
        logged = try await h.loggedEvents(limit: 100).filter { $0.topic == "auth.passwordResetRequested" }
        #expect(logged.count == 4)
    }

    @Test func unknownEmailAndWrongPasswordLookTheSameAndTheUnknownPathHashes() async throws {
        let h = try await Harness.make()
        _ = try await h.signUpAndIn()
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password")) }
        let before = h.plugin.hasher.dummyVerifications
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "nobody@example.com", password: "whatever1")) }
        #expect(h.plugin.hasher.dummyVerifications == before + 1)
    }

    @Test func afterFiveFailuresEachAttemptWaitsAndSuccessResets() async throws {
        let h = try await Harness.make()
        _ = try await h.signUpAndIn()
        for _ in 0..<5 {
            await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password")) }
        }
        do {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"))
            Issue.record("expected TooManyAttempts")
        } catch let error as AuthError {
            #expect(error == .tooManyAttempts(retryAfterSeconds: 1))
        }
        // Hardening finding 3: retryAfterSeconds is the truth: once it has passed, the right
        // password works (it used to stay refused until the 15-minute window was over).
        h.clock.advance(seconds: 1)
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"))
        // Success forgot the failures: five more wrong ones are evaluated again.
        for _ in 0..<5 {
            await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password")) }
        }
        // Each further failure doubles the wait, counted from the last failure.
        h.clock.advance(seconds: 1)
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong password")) }
        do {
            _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"))
            Issue.record("expected TooManyAttempts")
        } catch let error as AuthError {
            #expect(error == .tooManyAttempts(retryAfterSeconds: 2))
        }
        h.clock.advance(seconds: 2)
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse"))
    }

    /// Hardening finding 3: the failure count was read before the password was checked, so
    /// parallel guesses were all evaluated past the limit.
    @Test func parallelGuessesAreCountedOneByOne() async throws {
        let h = try await Harness.make()
        _ = try await h.signUpAndIn()
        let outcomes = await withTaskGroup(of: String?.self) { group in
            for i in 0..<16 {
                group.addTask {
                    do {
                        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "wrong guess \(i)"))
                        return nil
                    } catch let error as AuthError {
                        return error.wireName
                    } catch {
                        return nil
                    }
                }
            }
            var kinds: [String?] = []
            for await kind in group { kinds.append(kind) }
            return kinds
        }
        #expect(outcomes.filter { $0 == "io.appd.Auth.InvalidCredentials" }.count == 5, "\(outcomes)")
        #expect(outcomes.filter { $0 == "io.appd.Auth.TooManyAttempts" }.count == 11, "\(outcomes)")
    }

    @Test func signOutTakesEffectOnTheNextCallAndExpiryIsTyped() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let a = h.connection(), b = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: a)
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: b)
        _ = try await h.bus.send(AuthInterface.SignOut(), as: a)
        // The other connection holding the same token is refused on its very next call.
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: b) }

        let second = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse")).session
        let c = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: second.accessToken), as: c)
        h.clock.advance(seconds: 3601)
        await expectAuthError("SessionExpired") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: c) }
    }

    @Test func refreshRotatesAndAReusedTokenRevokesTheFamily() async throws {
        let h = try await Harness.make()
        let first = try await h.signUpAndIn()
        let second = try await h.bus.send(AuthInterface.Refresh(refreshToken: first.refreshToken)).session
        #expect(second.refreshToken != first.refreshToken)
        #expect(second.accessToken != first.accessToken)
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: second.accessToken), as: caller)
        // Within the reuse interval the same token gets the same pair (two appctl runs at once).
        let again = try await h.bus.send(AuthInterface.Refresh(refreshToken: first.refreshToken)).session
        #expect(again.accessToken == second.accessToken && again.refreshToken == second.refreshToken)
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller)
        // After it, the rotated token coming back (stolen?) revokes the whole family.
        h.clock.advance(seconds: 11)
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: first.refreshToken)) }
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller) }
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: second.refreshToken)) }
    }

    /// The pair kept for the reuse interval opens only with the refresh token it replaced, and
    /// not once changed; the interval over, it is cleared from the row.
    @Test func theKeptPairOpensOnlyWithTheTokenItReplacedAndIsClearedAfterTheInterval() async throws {
        let pair = RotationSeal.Pair(accessToken: "access-A_1", refreshToken: "refresh-B_2", expiresAt: 1_800_000_000_000_000_000)
        let sealed = try RotationSeal.seal(pair, replacing: "old-token")
        #expect(RotationSeal.open(sealed, replacing: "old-token") == pair)
        #expect(RotationSeal.open(sealed, replacing: "another-token") == nil)
        var bytes = try #require(Base64.decode(sealed))
        bytes[bytes.count / 2] ^= 1
        #expect(RotationSeal.open(Base64.encode(bytes), replacing: "old-token") == nil)

        let h = try await Harness.make()
        let first = try await h.signUpAndIn()
        let second = try await h.bus.send(AuthInterface.Refresh(refreshToken: first.refreshToken)).session
        let held = { try await h.database.read { tx in try tx.query("SELECT COUNT(*) AS n FROM auth_rotated_refresh WHERE handed_out IS NOT NULL") }.first?.integer("n") }
        #expect(try await held() == 1)
        h.clock.advance(seconds: 11)
        _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: second.refreshToken))
        #expect(try await held() == 1, "the first pair's interval is over: only the newest is held")
    }

    /// Hardening finding 6: two concurrent refreshes with one token signed the user out everywhere.
    @Test func concurrentRefreshesWithOneTokenGetOnePairAndKeepTheSession() async throws {
        let h = try await Harness.make()
        let first = try await h.signUpAndIn()
        let pairs = try await withThrowingTaskGroup(of: Session.self) { group in
            for _ in 0..<4 { group.addTask { try await h.bus.send(AuthInterface.Refresh(refreshToken: first.refreshToken)).session } }
            var all: [Session] = []
            for try await session in group { all.append(session) }
            return all
        }
        #expect(Set(pairs.map(\.refreshToken)).count == 1 && Set(pairs.map(\.accessToken)).count == 1)
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: pairs[0].accessToken), as: caller)
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller)
        _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: pairs[0].refreshToken))

        // A disabled account's refresh token is refused and not rotated: it works again once enabled.
        let other = try await h.signUpAndIn("bo@example.com", password: "another password")
        _ = try await h.bus.send(AuthInterface.DisableUser(email: "bo@example.com"))
        await expectAuthError("AccountDisabled") { _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: other.refreshToken)) }
        _ = try await h.bus.send(AuthInterface.EnableUser(email: "bo@example.com"))
        _ = try await h.bus.send(AuthInterface.Refresh(refreshToken: other.refreshToken))
    }

    @Test func theOnboardingGateReadsPersistedState() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let caller = h.connection()
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(OnboardedOnly(), as: caller) }
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        await expectAuthError("OnboardingRequired") { _ = try await h.bus.send(OnboardedOnly(), as: caller) }
        #expect(try await h.bus.send(AuthInterface.CompleteOnboarding(), as: caller).user.onboarded)
        _ = try await h.bus.send(OnboardedOnly(), as: caller)
    }

    @Test func theDatabaseHoldsNoRawTokenOrPassword() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn(password: "a very particular password")
        // The pair a refresh hands out is kept for the reuse interval, sealed: not in the clear.
        let refreshed = try await h.bus.send(AuthInterface.Refresh(refreshToken: session.refreshToken)).session
        let text = try await h.everythingStored()
        #expect(text.count > 0)
        for secret in [session.accessToken, session.refreshToken, refreshed.accessToken, refreshed.refreshToken, "a very particular password"] {
            #expect(!text.contains(secret))
        }
    }
}

@Suite(.cleansUp) struct AuthAccountTests {
    @Test func changingThePasswordRevokesEveryOtherSession() async throws {
        let h = try await Harness.make()
        let one = try await h.signUpAndIn()
        let two = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse")).session
        let a = h.connection(), b = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: one.accessToken), as: a)
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: two.accessToken), as: b)
        await expectAuthError("InvalidCredentials") {
            _ = try await h.bus.send(AuthInterface.ChangePassword(currentPassword: "nope nope", newPassword: "new password 1"), as: a)
        }
        _ = try await h.bus.send(AuthInterface.ChangePassword(currentPassword: "correct horse", newPassword: "new password 1"), as: a)
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: a)  // this session stays
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: b) }
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse")) }
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "new password 1"))
    }

    /// A connection an external plugin authenticated with its credential.
    func pluginConnection(_ h: Harness, capabilities: Set<String>) -> Caller {
        let connection = ConnectionContext(id: Int.random(in: 1...1_000_000), peer: PeerCredentials(uid: 0, gid: 0, pid: 2))
        connection.pluginScope = PluginScope(
            plugin: "mailer", publishes: [], subscribes: ["auth.passwordResetRequested"], calls: ["io.appd.Auth.IssueResetToken"],
            capabilities: capabilities)
        return Caller(peer: connection.peer, connection: connection)
    }

    @Test func aResetTokenIsMintedOnlyForTheCapabilityWorksOnceAndExpires() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        let mail = try h.bus.subscribe(PasswordResetRequested.self)
        // Same reply for an unknown account, and nothing published for it.
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "nobody@example.com"))
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "ada@example.com"))
        var iterator = mail.makeAsyncIterator()
        let received = try #require(try await iterator.next())
        let event = received.event
        #expect(event.email == "Ada@example.com")
        #expect(received.metadata.sequence != nil)  // durable: a mailer that was down still gets it

        // Neither a user, nor an admin peer, nor a plugin without the capability can mint the token.
        await #expect(throws: PermissionDenied.self) { _ = try await h.bus.send(AuthInterface.IssueResetToken(requestId: event.requestId), as: caller) }
        let admin = Caller(peer: PeerCredentials(uid: 0, gid: 0, pid: 1), connection: ConnectionContext(id: 7, peer: nil))
        await #expect(throws: PermissionDenied.self) { _ = try await h.bus.send(AuthInterface.IssueResetToken(requestId: event.requestId), as: admin) }
        await #expect(throws: PermissionDenied.self) {
            _ = try await h.bus.send(AuthInterface.IssueResetToken(requestId: event.requestId), as: pluginConnection(h, capabilities: []))
        }
        let mailer = pluginConnection(h, capabilities: ["auth.resetTokens"])
        let first = try await h.bus.send(AuthInterface.IssueResetToken(requestId: event.requestId), as: mailer)
        // Issuing again (a mailer that crashed before sending) replaces the first token.
        let issued = try await h.bus.send(AuthInterface.IssueResetToken(requestId: event.requestId), as: mailer)
        #expect(issued.email == "Ada@example.com")
        await expectAuthError("InvalidResetToken") {
            _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: first.resetToken, newPassword: "brand new pass"))
        }
        _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: issued.resetToken, newPassword: "brand new pass"))
        await expectAuthError("Unauthenticated") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller) }
        await expectAuthError("InvalidResetToken") {
            _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: issued.resetToken, newPassword: "another new one"))
        }
        await expectAuthError("InvalidResetToken") { _ = try await h.bus.send(AuthInterface.IssueResetToken(requestId: event.requestId), as: mailer) }
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "brand new pass"))

        // Two pending requests: once one resets the password, the other's token is void.
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "ada@example.com"))
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "ada@example.com"))
        let one = try #require(try await iterator.next()).event, two = try #require(try await iterator.next()).event
        let tokenOne = try await h.bus.send(AuthInterface.IssueResetToken(requestId: one.requestId), as: mailer).resetToken
        let tokenTwo = try await h.bus.send(AuthInterface.IssueResetToken(requestId: two.requestId), as: mailer).resetToken
        _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: tokenTwo, newPassword: "third password"))
        await expectAuthError("InvalidResetToken") { _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: tokenOne, newPassword: "fourth password")) }

        // Hardening finding 5: a password change voids every token issued before it. (Three
        // requests an hour are recorded per address: the next hour.)
        h.clock.advance(seconds: 3601)
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "ada@example.com"))
        let beforeChange = try #require(try await iterator.next()).event
        let staleToken = try await h.bus.send(AuthInterface.IssueResetToken(requestId: beforeChange.requestId), as: mailer).resetToken
        let signedIn = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "third password")).session
        let owner = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: signedIn.accessToken), as: owner)
        _ = try await h.bus.send(AuthInterface.ChangePassword(currentPassword: "third password", newPassword: "fifth password"), as: owner)
        await expectAuthError("InvalidResetToken") { _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: staleToken, newPassword: "sixth password")) }

        // A request expires, and so does its token.
        h.clock.advance(seconds: 3601)
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "ada@example.com"))
        let late = try #require(try await iterator.next()).event
        let lateToken = try await h.bus.send(AuthInterface.IssueResetToken(requestId: late.requestId), as: mailer).resetToken
        h.clock.advance(seconds: 31 * 60)
        await expectAuthError("InvalidResetToken") { _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: lateToken, newPassword: "too late now")) }
        await expectAuthError("InvalidResetToken") { _ = try await h.bus.send(AuthInterface.IssueResetToken(requestId: late.requestId), as: mailer) }

        // No token is in any event, nor anywhere in the database files.
        let log = try await h.loggedEvents(limit: 1000)
        let tokens = [first.resetToken, issued.resetToken, tokenOne, tokenTwo, staleToken, lateToken]
        #expect(log.contains { $0.topic == PasswordResetRequested.topic })
        #expect(!log.contains { event in tokens.contains { (try? event.json().jsonText.contains($0)) == true } })
        await h.database.close()
        for file in ["appd.db", "appd.db-wal"] {
            let bytes = String(decoding: (try? readFile(h.directory + "/" + file)) ?? [], as: UTF8.self)
            for token in tokens { #expect(!bytes.contains(token), "a reset token is in \(file)") }
        }
    }

    @Test func deletingTheAccountLogsTheEventInTheSameTransaction() async throws {
        let h = try await Harness.make()
        let session = try await h.signUpAndIn()
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "wrong password"), as: caller) }
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "correct horse"), as: caller)
        let log = try await h.loggedEvents(limit: 100)
        #expect(log.last?.topic == "auth.accountDeleted")
        #expect(log.last.flatMap { try? $0.json() }?["userId"] == .string(session.user.id))
        await expectAuthError("InvalidCredentials") { _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse")) }
    }

    @Test func adminsListDisableAndEnableAccounts() async throws {
        let h = try await Harness.make()
        for name in ["c", "a", "b"] {
            _ = try await h.bus.send(AuthInterface.SignUp(email: "\(name)@example.com", password: "password \(name)", displayName: nil))
        }
        let first = try await h.bus.send(AuthInterface.ListUsers(cursor: nil, limit: 2))
        #expect(first.users.map(\.email) == ["a@example.com", "b@example.com"])
        let second = try await h.bus.send(AuthInterface.ListUsers(cursor: first.nextCursor, limit: 2))
        #expect(second.users.map(\.email) == ["c@example.com"])
        #expect(second.nextCursor == nil)

        let session = try await h.bus.send(AuthInterface.SignIn(email: "b@example.com", password: "password b")).session
        let caller = h.connection()
        _ = try await h.bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        _ = try await h.bus.send(AuthInterface.DisableUser(email: "B@example.com"))
        await expectAuthError("AccountDisabled") { _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller) }
        await expectAuthError("AccountDisabled") { _ = try await h.bus.send(AuthInterface.SignIn(email: "b@example.com", password: "password b")) }
        _ = try await h.bus.send(AuthInterface.EnableUser(email: "b@example.com"))
        _ = try await h.bus.send(AuthInterface.WhoAmI(), as: caller)
        _ = try await h.bus.send(AuthInterface.SignIn(email: "b@example.com", password: "password b"))
        await expectAuthError("NotFound") { _ = try await h.bus.send(AuthInterface.DisableUser(email: "zz@example.com")) }
    }
}

/// A whole file's bytes (the database files, to prove what is not in them).
func readFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 65536) }
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}
