// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Foundation
import TodoDemoCore

// Runs the demo app's flow against a real appd, screen by screen, through the same view models
// the app's views would use:
//   todo-demo http://127.0.0.1:8080 [folder]
// Exits 1, saying what went wrong, when a step does not end as the app expects.

@MainActor
func demo(server: URL, folder: String) async throws {
    let app = AppContainer(server: server, folder: folder)
    let following = Task { await app.session.follow() }
    defer { following.cancel() }
    try await until("the sign-in screen") { if case .signIn = app.session.route { true } else { false } }

    let signIn = app.signIn()
    signIn.email = "demo-\(UUID().uuidString.prefix(8).lowercased())@example.com"
    signIn.password = "correct horse battery"
    await signIn.signUp()
    try check(signIn.error == nil, "sign-up: \(String(describing: signIn.error))")
    try await until("onboarding") { app.session.route == .onboarding }
    await signIn.finishOnboarding()
    try await until("home") { if case .home = app.session.route { true } else { false } }
    print("signed up as \(signIn.email), onboarded: home")

    // Todos: made on the device at once, then sent and confirmed in the background.
    let list = app.todoList()
    let observing = Task { await list.observe() }
    defer { observing.cancel() }
    app.startSync()
    defer { app.stopSync() }
    await list.add("buy milk")
    await list.add("call the bank", due: Date().addingTimeInterval(86_400))
    try await until("two todos on the screen") { list.todos.count == 2 }
    let milk = try list.todos.first { $0.title == "buy milk" } ?? { throw DemoFailed(description: "no milk on the screen") }()
    await list.toggle(milk)
    // Confirmed: the add and the completion made version 2 (appd's count), nothing left to send.
    try await until("everything confirmed by appd") {
        list.unsent == 0 && list.todos.first { $0.id == milk.id }?.version == 2 && list.todos.allSatisfy { $0.version > 0 }
    }
    let onServer = try await app.appd.todos.list().todos
    try check(Set(onServer.map(\.id)) == Set(list.todos.map(\.id)), "appd has \(onServer.map(\.id)), the screen \(list.todos.map(\.id))")
    try check(onServer.first { $0.id == milk.id }?.done == true, "the completion did not reach appd")
    print("todos: \(list.todos.map { "\($0.done ? "[x]" : "[ ]") \($0.title)" }.joined(separator: ", ")) — the same ids on appd")

    // Chat: the reply streams in; the next message is over the free quota (appd started with
    // `--payments-meters chat.messages=1/day/pro`): the paywall.
    let conversation = try await app.appd.chat.createConversation(title: "demo")
    let chat = app.chat(conversation.id)
    await chat.send("hello")
    try check(chat.error == nil && chat.messages.last?.role == "assistant", "chat: \(String(describing: chat.error)) \(chat.messages)")
    print("chat reply: \(chat.messages.last?.text.prefix(60) ?? "")")
    await chat.send("and again")
    try check(chat.error == .paywall(entitlement: "pro"), "the second message: \(String(describing: chat.error))")
    print("second message: paywall for pro")

    await app.appd.signOut()
    try await until("the sign-in screen again") { app.session.route == .signIn(message: nil) }
    print("signed out: sign-in screen")
}

struct DemoFailed: Error, CustomStringConvertible { let description: String }

func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw DemoFailed(description: message()) }
}

/// Waits for what the screen shows, at most 10 s.
@MainActor
func until(_ what: String, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw DemoFailed(description: "never reached \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2, let server = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: todo-demo <appd HTTP URL> [folder]\n".utf8))
    exit(2)
}
let folder = arguments.count >= 3 ? arguments[2] : NSTemporaryDirectory() + "todo-demo-" + UUID().uuidString
do {
    try await demo(server: server, folder: folder)
    print("todo-demo: every step ended as the app expects")
} catch {
    FileHandle.standardError.write(Data("todo-demo: \(error)\n".utf8))
    exit(1)
}
