// SPDX-License-Identifier: Apache-2.0
import AppdClient
import BusCore
import Contracts
import Foundation
import Testing
import TestSupport

/// The Swift client against the real appd binary over HTTP: the flow an app goes through.
@Suite(.serialized, .timeLimit(.minutes(2))) struct AppdClientTests {
    @Test func anAppSignsUpAddsTodosChatsSubscribesAcrossARestartRefreshesAndSignsOut() async throws {
        let port = try freeTCPPort()
        let flags = ["--http-listen", "127.0.0.1:\(port)", "--payments-meters", "chat.messages=1/day/pro"]
        var daemon = try await Daemon.start(flags)
        let store = InMemoryTokenStore()
        let appd = AppdClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, tokenStore: store)

        // Sign-up signs in: the session is kept, and the calls that need it carry it.
        await #expect(throws: AppdClientError.notSignedIn) { _ = try await appd.call(AuthInterface.WhoAmI()) }
        let signedUp = try await appd.call(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse battery"))
        #expect(await store.load()?.user.email == "ada@example.com")
        #expect(try await appd.call(AuthInterface.WhoAmI()).user.id == signedUp.user.id)
        // Typed errors: onboarding first, then the todo another user cannot see.
        await #expect(throws: AuthError.onboardingRequired) { _ = try await appd.call(TodosInterface.List()) }
        _ = try await appd.call(AuthInterface.CompleteOnboarding())

        // Todos, with an idempotency key: the retry of an Add has its effect once.
        let added = try await appd.call(TodosInterface.Add(title: "buy milk"), idempotencyKey: "8d5f1a52-2d44-4d0f-8d51-2f3a0f7e0c11")
        let again = try await appd.call(TodosInterface.Add(title: "buy milk"), idempotencyKey: "8d5f1a52-2d44-4d0f-8d51-2f3a0f7e0c11")
        #expect(again.todo == added.todo)
        #expect(try await appd.call(TodosInterface.List()).todos.map(\.id) == [added.todo.id])
        await #expect(throws: TodosError.notFound) { _ = try await appd.call(TodosInterface.Get(id: "t_zzzzzzzzzz")) }
        do {
            _ = try await appd.call(TodosInterface.Complete(id: added.todo.id, expectedVersion: 7))
            Issue.record("a stale version was accepted")
        } catch TodosError.conflict(let current) {
            #expect(current == added.todo)
        }

        // A streamed chat reply; the next message is over the free quota: a typed 402.
        let conversation = try await appd.call(ChatInterface.CreateConversation(title: "hello")).conversation
        var replies: [SendReply] = []
        for try await reply in appd.stream(ChatInterface.Send(conversationId: conversation.id, text: "hi there")) { replies.append(reply) }
        // First the message's id, then the text as it comes, then the stored message.
        #expect(replies.count >= 3 && replies.dropFirst().dropLast().allSatisfy { $0.delta != nil }, "\(replies)")
        #expect(replies.last?.message?.status == "complete", "\(replies)")
        #expect(replies.compactMap(\.delta).joined() == replies.last?.message?.text)
        do {
            for try await _ in appd.stream(ChatInterface.Send(conversationId: conversation.id, text: "again")) {}
            Issue.record("the second message passed the quota")
        } catch PaymentsError.paymentRequired(let entitlement, let remaining, let resetsAt) {
            #expect(entitlement == "pro" && remaining == 0 && resetsAt != nil)
        }

        // A subscription that resumes after appd restarts: no gap, no repeat.
        var events = appd.subscribe(topics: ["todos.>"], since: 0).makeAsyncIterator()
        let first = try #require(try await events.next())
        #expect(first.topic == "todos.created" && first.payload["todoId"]?.stringValue == added.todo.id, "\(first)")
        #expect(await daemon.stop() == 0)
        daemon = try await Daemon.start(flags, directory: daemon.directory)
        let second = try await appd.call(TodosInterface.Add(title: "after the restart")).todo
        let next = try #require(try await events.next())
        #expect(next.topic == "todos.created" && next.payload["todoId"]?.stringValue == second.id, "\(next)")
        #expect((next.seq ?? 0) > (first.seq ?? 0))

        // Refreshing: a client that refreshes before every call (a huge margin). Concurrent
        // calls share one refresh (a spent refresh token presented twice would revoke the family).
        let before = try #require(await store.load())
        let eager = AppdClient(baseURL: appd.baseURL, tokenStore: store, refreshMargin: .seconds(100 * 365 * 86_400))
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<4 { group.addTask { try await eager.call(AuthInterface.WhoAmI()).user.id } }
            for try await id in group { #expect(id == signedUp.user.id) }
        }
        let after = try #require(await store.load())
        #expect(after.refreshToken != before.refreshToken && after.accessToken != before.accessToken)
        #expect(try await eager.call(TodosInterface.List()).todos.count == 2)

        // Signing out ends the session on appd and forgets it here.
        await eager.signOut()
        #expect(await store.load() == nil)
        await #expect(throws: AppdClientError.notSignedIn) { _ = try await eager.call(TodosInterface.List()) }
        let stale = AppdClient(baseURL: appd.baseURL, tokenStore: InMemoryTokenStore(after), refreshMargin: .zero)
        await #expect(throws: AuthError.self) { _ = try await stale.call(TodosInterface.List()) }
        #expect(await daemon.stop() == 0)
    }

    /// Leaving a stream's loop closes the connection, which cancels the call on appd: the reply
    /// is stored as cancelled, not run to its end.
    @Test func stoppingAStreamCancelsTheReplyOnAppd() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)", "--chat-echo-delay-ms", "400"])
        let appd = AppdClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        _ = try await appd.call(AuthInterface.SignUp(email: "bo@example.com", password: "correct horse battery"))
        _ = try await appd.call(AuthInterface.CompleteOnboarding())
        let conversation = try await appd.call(ChatInterface.CreateConversation()).conversation
        var deltas = 0
        for try await reply in appd.stream(ChatInterface.Send(conversationId: conversation.id, text: "one two three four five six seven eight nine ten")) {
            if reply.delta != nil {
                deltas += 1
                break
            }
        }
        #expect(deltas == 1)
        let cancelled = await eventually(every: .milliseconds(50)) {
            (try? await appd.call(ChatInterface.History(conversationId: conversation.id)).messages.last?.status) == "cancelled"
        }
        #expect(cancelled, "the reply was not stored as cancelled")
        #expect(await daemon.stop() == 0)
    }

    /// A refused access token (401) with a good refresh token: the client refreshes once,
    /// saves the rotated session and retries the call, which succeeds.
    @Test func aRefusedAccessTokenIsRefreshedOnceAndTheCallRetried() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let url = URL(string: "http://127.0.0.1:\(port)")!
        let first = AppdClient(baseURL: url)
        let session = try #require(try await first.call(AuthInterface.SignUp(email: "cy@example.com", password: "correct horse battery")).session)
        var broken = session
        broken.accessToken = "not-a-token-appd-made"
        let store = InMemoryTokenStore(broken)
        let appd = AppdClient(baseURL: url, tokenStore: store)
        #expect(try await appd.call(AuthInterface.WhoAmI()).user.email == "cy@example.com")
        let saved = try #require(await store.load())
        #expect(saved.accessToken != broken.accessToken && saved.refreshToken != session.refreshToken)
        #expect(await daemon.stop() == 0)
    }

    /// Calls and streams cancelled the moment they start (a view that disappears): each ends as
    /// done or cancelled, and Foundation does not trap. (On Linux, a session with a URL cache
    /// let a cancel report its failure after the task had left the session: a fatal error in
    /// FoundationNetworking, which killed this test process in CI.)
    @Test func callsAndStreamsCancelledAsTheyStartEndCancelledWithoutTrapping() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let appd = AppdClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        var ended = (done: 0, cancelled: 0)
        for round in 0..<600 {
            // Unstructured: a call an app's view starts and cancels when it goes away.
            let call = Task { try await appd.call(AuthInterface.CheckSignUp(email: "r\(round)@example.com", password: "correct horse battery")) }
            // Cancelled at different points: before it sends, while URLSession starts the task,
            // while appd answers (a spread of delays, not a wait for anything).
            if round % 4 != 0 { try await Task.sleep(for: .microseconds(round % 40 * 25)) }
            call.cancel()
            switch await call.result {
            case .success: ended.done += 1
            case .failure(let error):
                #expect(error is CancellationError || (error as? URLError)?.code == .cancelled, "round \(round): \(error)")
                ended.cancelled += 1
            }
            if round % 10 == 0 {
                // Unstructured: a subscription stopped as it opens.
                let stream = Task { for try await _ in appd.subscribe(topics: ["todos.>"], since: 0) {} }
                stream.cancel()
                _ = await stream.result
            }
        }
        #expect(ended.cancelled > 0, "no call was cancelled before it ended: the test did not test cancelling")
        // The client still works.
        _ = try await appd.call(AuthInterface.CheckSignUp(email: "after@example.com", password: "correct horse battery"))
        #expect(await daemon.stop() == 0)
    }
}
