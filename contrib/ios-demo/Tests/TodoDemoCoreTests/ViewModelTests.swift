// SPDX-License-Identifier: Apache-2.0
import AppdClient
import AppdClientTesting
import Contracts
import Foundation
import Testing
@testable import TodoDemoCore

/// The demo app's view models with no server: AppdClientTesting's fakes stand in for appd, as
/// a template's repositories are faked in its tests.
@MainActor @Suite struct ViewModelTests {
    @Test func theSessionControllerRoutesOnTheAuthState() async throws {
        let auth = InMemoryAuth()
        let session = SessionController(auth: auth)
        let following = Task { await session.follow() }
        defer { following.cancel() }
        try await until { session.route == .signIn(message: nil) }

        let signIn = SignInViewModel(auth: auth)
        signIn.email = "ada@example.com"
        signIn.password = "short"
        await signIn.signUp()
        #expect(signIn.error != nil && session.route == .signIn(message: nil), "a refused sign-up stays on the screen")
        signIn.password = "correct horse battery"
        await signIn.signUp()
        try await until { session.route == .onboarding }
        await signIn.finishOnboarding()
        try await until { if case .home = session.route { true } else { false } }

        await auth.endSession(.revoked)
        try await until { session.route == .signIn(message: "You were signed out. Please sign in again.") }
        signIn.password = "wrong password!"
        await signIn.signIn()
        #expect(signIn.error == AppError(AuthError.invalidCredentials))
    }

    @Test func theTodoListWorksOfflineAndCatchesUp() async throws {
        let server = InMemoryTodos()
        await server.setReachable(false)
        let repository = OfflineTodos(service: server, store: InMemoryOfflineTodosStore())
        let list = TodoListViewModel(repository: repository)
        let observing = Task { await list.observe() }
        defer { observing.cancel() }

        await list.add("written on the train")
        try await until { list.todos.map(\.title) == ["written on the train"] && list.unsent == 1 }
        await list.refresh()
        #expect(list.error != nil, "offline: the refresh says so, the todo stays")
        #expect(list.todos.count == 1)

        await server.setReachable(true)
        await list.refresh()
        try await until { list.unsent == 0 && list.todos.first?.version == 1 }
        #expect(list.error == nil)
        #expect(try await server.list().todos.map(\.id) == list.todos.map(\.id))
    }

    @Test func aConflictIsShownAndTheUsersChoiceIsSent() async throws {
        let server = InMemoryTodos()
        let repository = OfflineTodos(service: server, store: InMemoryOfflineTodosStore())
        let list = TodoListViewModel(repository: repository)
        let observing = Task { await list.observe() }
        defer { observing.cancel() }
        await list.add("plan the trip")
        await list.refresh()
        // The list shows what the observing task hands it: wait for the sent todo to arrive.
        try await until { list.todos.first?.version == 1 && list.unsent == 0 }
        let todo = try #require(list.todos.first)
        _ = try await server.update(id: todo.id, TodoEdit(title: "plan the trip (web)"))
        await list.rename(todo, to: "plan the trip (phone)")
        await list.refresh()
        try await until { list.conflicts.count == 1 }
        let conflict = try #require(list.conflicts.first)
        #expect(conflict.server.title == "plan the trip (web)" && conflict.mine?.title == "plan the trip (phone)")
        await list.keepMine(conflict)
        await list.refresh()
        #expect(try await server.get(id: todo.id).title == "plan the trip (phone)")
        try await until { list.conflicts.isEmpty && list.todos.first?.title == "plan the trip (phone)" }
    }

    @Test func aChatReplyStreamsAndTheQuotaShowsThePaywall() async throws {
        let chat = InMemoryChat(reply: { "echo \($0)" })
        let conversation = try await chat.createConversation(title: "hi")
        let model = ChatViewModel(chat: chat, conversationId: conversation.id)
        await model.send("hello there")
        #expect(model.error == nil)
        #expect(model.messages.map(\.text) == ["hello there", "echo hello there"])
        #expect(model.streaming == nil)

        await chat.failNextSend(with: PaymentsError.paymentRequired(entitlement: "pro", remaining: 0, resetsAt: nil))
        await model.send("again")
        #expect(model.error == .paywall(entitlement: "pro"))
    }
}

@MainActor
func until(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw CancellationError() }
        try await Task.sleep(for: .milliseconds(5))
    }
}
