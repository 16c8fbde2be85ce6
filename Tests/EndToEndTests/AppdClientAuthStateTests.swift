// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Foundation
import Testing
import TestSupport

/// AppdClient's auth states against the real appd: what a template's `SessionController`
/// routes on. Every sign-in path moves it, and a session appd ends elsewhere (signed out
/// everywhere, account deleted) is `sessionEnded` at the next call, not a silent sign-out.
@Suite(.serialized, .timeLimit(.minutes(2))) struct AppdClientAuthStateTests {
    static func client(_ port: UInt16) -> AppdClient {
        AppdClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, tokenStore: InMemoryTokenStore())
    }

    @Test func everySignInMovesTheStateAndAnEndedSessionSaysSo() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)", "--guest-accounts", "true"])
        let phone = Self.client(port), tablet = Self.client(port)
        var states = await phone.authStates().makeAsyncIterator()
        #expect(await states.next() == .signedOut, "the current state comes first")

        // Sign-up signs in; onboarding changes the user the state carries.
        let signedUp = try await phone.call(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse battery"))
        #expect(await states.next() == .signedIn(signedUp.user))
        let onboarded = try await phone.call(AuthInterface.CompleteOnboarding()).user
        #expect(onboarded.onboarded)
        #expect(await states.next() == .signedIn(onboarded))
        // A late listener gets the current state first.
        var late = await phone.authStates().makeAsyncIterator()
        #expect(await late.next() == .signedIn(onboarded))

        // Signed out everywhere from the tablet: the phone's next call ends its session.
        _ = try await tablet.call(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse battery"))
        _ = try await tablet.call(AuthInterface.SignOutEverywhere())
        await #expect(throws: (any Error).self) { _ = try await phone.call(TodosInterface.List()) }
        #expect(await states.next() == .sessionEnded(.revoked))
        #expect(await phone.sessions.current == nil)

        // Signed in again, then the account is deleted from the tablet.
        let again = try await phone.call(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse battery")).session
        #expect(await states.next() == .signedIn(again.user))
        _ = try await tablet.call(AuthInterface.SignIn(email: "ada@example.com", password: "correct horse battery"))
        _ = try await tablet.call(AuthInterface.DeleteAccount(password: "correct horse battery"))
        await #expect(throws: (any Error).self) { _ = try await phone.call(AuthInterface.WhoAmI()) }
        #expect(await states.next() == .sessionEnded(.revoked))

        // A guest, upgraded in place, then signed out by the user.
        let guest = try await phone.call(AuthInterface.SignInAnonymously()).session.user
        #expect(guest.guest)
        #expect(await states.next() == .signedIn(guest))
        let upgraded = try await phone.call(AuthInterface.UpgradeGuest(email: "bo@example.com", password: "another horse battery")).user
        #expect(!upgraded.guest && upgraded.id == guest.id)
        #expect(await states.next() == .signedIn(upgraded))
        await phone.signOut()
        #expect(await states.next() == .signedOut)
        #expect(await daemon.stop() == 0)
    }

    /// Typed realtime: `subscribe(to: TodoCreated.self)` gives the contract's own event type,
    /// from the log after `since` and then live, and nothing of other types.
    @Test func typedEventsArriveAsTheirContractTypes() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let appd = Self.client(port)
        _ = try await appd.call(AuthInterface.SignUp(email: "cy@example.com", password: "correct horse battery"))
        _ = try await appd.call(AuthInterface.CompleteOnboarding())
        let first = try await appd.call(TodosInterface.Add(title: "before the stream")).todo
        _ = try await appd.call(TodosInterface.Complete(id: first.id))
        var created = appd.subscribe(to: TodoCreated.self, since: 0).makeAsyncIterator()
        let replayed = try await created.next()
        #expect(replayed?.event.todoId == first.id && replayed?.event.title == "before the stream" && replayed?.sequence != nil)
        let live = try await appd.call(TodosInterface.Add(title: "while it runs")).todo
        let next = try await created.next()
        #expect(next?.event.todoId == live.id && next?.event.title == "while it runs", "the completion in between is not a TodoCreated")
        #expect((next?.sequence ?? 0) > (replayed?.sequence ?? 0))
        #expect(await daemon.stop() == 0)
    }

    /// A read is retried across a gap in service (appd restarting: connections refused), with
    /// backoff; a write without a key is not (it may have run).
    @Test func aReadIsRetriedAcrossARestartAndAPlainWriteIsNot() async throws {
        let port = try freeTCPPort()
        let flags = ["--http-listen", "127.0.0.1:\(port)"]
        let daemon = try await Daemon.start(flags)
        let appd = AppdClient(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, tokenStore: InMemoryTokenStore(),
            retry: RetryPolicy(retries: 12, initialDelay: .milliseconds(100), maxDelay: .milliseconds(800)))
        _ = try await appd.call(AuthInterface.SignUp(email: "di@example.com", password: "correct horse battery"))
        _ = try await appd.call(AuthInterface.CompleteOnboarding())
        let added = try await appd.call(TodosInterface.Add(title: "kept")).todo
        #expect(await daemon.stop() == 0)
        // Neither a read nor keyed: SignOut is sent once, and fails at once.
        let begun = ContinuousClock.now
        await #expect(throws: AppdClientError.self) { _ = try await appd.call(AuthInterface.SignOut()) }
        // Twelve retries from 100 ms doubling to 800 ms would take about 8 s: well under that is none.
        #expect(ContinuousClock.now - begun < .seconds(3), "no retries for a plain write")
        async let listed = appd.call(TodosInterface.List())
        try await Task.sleep(for: .milliseconds(300))
        daemon.keepDirectory = true
        let restarted = try await Daemon.start(flags, directory: daemon.directory)
        #expect(try await listed.todos.map(\.id) == [added.id], "the read waited for appd and got the todo")
        #expect(await restarted.stop() == 0)
    }

    /// A read refused with 429 and `Retry-After` (the account's call rate) waits as long as
    /// appd says and then succeeds; with no retries left it is the typed refusal.
    @Test func aReadWaitsOutRetryAfterAndThenSucceeds() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)", "--account-calls-per-minute", "30", "--account-call-burst", "4"])
        let tokens = InMemoryTokenStore()
        let appd = AppdClient(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, tokenStore: tokens,
            retry: RetryPolicy(retries: 3, initialDelay: .milliseconds(10), maxDelay: .seconds(5)))
        _ = try await appd.call(AuthInterface.SignUp(email: "ed@example.com", password: "correct horse battery"))
        _ = try await appd.call(AuthInterface.CompleteOnboarding())
        // The burst is spent (sign-up's own calls count too); the next read is refused with
        // Retry-After: 2 (30 a minute), waited for, and answered.
        for _ in 0..<4 { _ = try? await appd.call(TodosInterface.List()) }
        let begun = ContinuousClock.now
        #expect(try await appd.call(TodosInterface.List()).todos.isEmpty)
        let waited = ContinuousClock.now - begun
        #expect(waited >= .milliseconds(1900) && waited < .seconds(10), "waited \(waited)")
        let impatient = AppdClient(baseURL: appd.baseURL, tokenStore: tokens, retry: .none)
        await #expect(throws: (any Error).self) { _ = try await impatient.call(TodosInterface.List()) }
        #expect(await daemon.stop() == 0)
    }
}
