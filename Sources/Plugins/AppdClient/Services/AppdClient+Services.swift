// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation

extension AppdClient {
    /// The todos calls as `TodosServing` (what a repository takes, so its tests can pass a fake).
    public var todos: AppdTodos { AppdTodos(client: self) }
    /// The auth calls as `AuthServing`.
    public var auth: AppdAuth { AppdAuth(client: self) }
    /// The chat calls as `ChatServing`.
    public var chat: AppdChat { AppdChat(client: self) }
}

/// `io.appd.Todos` over `AppdClient`.
public struct AppdTodos: TodosServing {
    public let client: AppdClient

    public func add(title: String, notes: String?, due: Date?, id: String?, idempotencyKey: String?) async throws -> Todo {
        try await client.call(TodosInterface.Add(title: title, notes: notes, dueAt: due?.rfc3339, id: id), idempotencyKey: idempotencyKey).todo
    }
    public func get(id: String) async throws -> Todo {
        try await client.call(TodosInterface.Get(id: id)).todo
    }
    public func list(_ filter: TodoFilter, cursor: String?, limit: Int?) async throws -> TodosInterface.TodoPage {
        try await client.call(TodosInterface.List(filter: filter.rawValue, cursor: cursor, limit: limit))
    }
    public func update(id: String, _ edit: TodoEdit, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        let fields = edit.command
        return try await client.call(
            TodosInterface.Update(id: id, title: fields.title, notes: fields.notes, dueAt: fields.dueAt, expectedVersion: expectedVersion),
            idempotencyKey: idempotencyKey
        ).todo
    }
    public func complete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await client.call(TodosInterface.Complete(id: id, expectedVersion: expectedVersion), idempotencyKey: idempotencyKey).todo
    }
    public func reopen(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Todo {
        try await client.call(TodosInterface.Reopen(id: id, expectedVersion: expectedVersion), idempotencyKey: idempotencyKey).todo
    }
    public func delete(id: String, expectedVersion: Int64?, idempotencyKey: String?) async throws {
        _ = try await client.call(TodosInterface.Delete(id: id, expectedVersion: expectedVersion), idempotencyKey: idempotencyKey)
    }
    public func clearCompleted() async throws -> Int {
        try await client.call(TodosInterface.ClearCompleted()).deleted
    }
    public func changes(after cursor: Int64?, limit: Int?) async throws -> TodosInterface.ChangePage {
        try await client.call(TodosInterface.Changes(cursor: cursor, limit: limit))
    }
    public func changeSignals(after cursor: Int64) -> AsyncThrowingStream<Int64, any Error> {
        client.sequenceNumbers(of: ["todos.>"], after: cursor)
    }
}

extension AppdClient {
    /// The log position of each of the user's events of `topics` after `cursor`, then live
    /// (resumed as `subscribe` is): what an offline repository pulls its feed on.
    func sequenceNumbers(of topics: [String], after cursor: Int64) -> AsyncThrowingStream<Int64, any Error> {
        let events = subscribe(topics: topics, since: cursor)
        return AsyncThrowingStream { continuation in
            // Unstructured: the stream's producer (AsyncThrowingStream's builder is synchronous); cancelled when the consumer stops.
            let task = Task {
                do {
                    for try await event in events {
                        if let seq = event.seq { continuation.yield(seq) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// `io.appd.Auth` over `AppdClient`; its session is the client's.
public struct AppdAuth: AuthServing {
    public let client: AppdClient

    public func states() async -> AsyncStream<AuthState> { await client.authStates() }
    public func signUp(email: String, password: String, displayName: String?) async throws -> User {
        try await client.call(AuthInterface.SignUp(email: email, password: password, displayName: displayName)).user
    }
    public func signIn(email: String, password: String) async throws -> User {
        try await client.call(AuthInterface.SignIn(email: email, password: password)).session.user
    }
    public func signIn(with provider: SignInProvider, idToken: String, nonce: SignInNonce?, fullName: String?) async throws -> User {
        try await client.call(AuthInterface.SignInWithIdToken(provider: provider, idToken: idToken, nonce: nonce, fullName: fullName)).session.user
    }
    public func signInAsGuest() async throws -> User {
        try await client.call(AuthInterface.SignInAnonymously()).session.user
    }
    public func upgradeGuest(email: String, password: String) async throws -> User {
        try await client.call(AuthInterface.UpgradeGuest(email: email, password: password)).user
    }
    public func currentUser() async throws -> User {
        try await client.call(AuthInterface.WhoAmI()).user
    }
    public func completeOnboarding() async throws -> User {
        try await client.call(AuthInterface.CompleteOnboarding()).user
    }
    public func setAvatar(fileId: String?) async throws -> User {
        try await client.call(AuthInterface.SetAvatar(fileId: fileId)).user
    }
    public func requestPasswordReset(email: String) async throws {
        _ = try await client.call(AuthInterface.RequestPasswordReset(email: email))
    }
    public func signOut() async { await client.signOut() }
    public func deleteAccount(password: String?) async throws {
        _ = try await client.call(AuthInterface.DeleteAccount(password: password))
    }
}

/// `io.appd.Chat` over `AppdClient`.
public struct AppdChat: ChatServing {
    public let client: AppdClient

    public func createConversation(title: String?, id: String?, temporary: Bool, idempotencyKey: String?) async throws -> Conversation {
        try await client.call(ChatInterface.CreateConversation(title: title, id: id, temporary: temporary ? true : nil), idempotencyKey: idempotencyKey).conversation
    }
    public func conversations(query: String?, cursor: String?, limit: Int?) async throws -> ChatInterface.ListConversations.Reply {
        try await client.call(ChatInterface.ListConversations(query: query, cursor: cursor, limit: limit))
    }
    public func rename(conversationId: String, title: String, expectedVersion: Int64?, idempotencyKey: String?) async throws -> Conversation {
        try await client.call(ChatInterface.RenameConversation(id: conversationId, title: title, expectedVersion: expectedVersion), idempotencyKey: idempotencyKey)
            .conversation
    }
    public func delete(conversationId: String, expectedVersion: Int64?, idempotencyKey: String?) async throws {
        _ = try await client.call(ChatInterface.DeleteConversation(id: conversationId, expectedVersion: expectedVersion), idempotencyKey: idempotencyKey)
    }
    public func conversationChanges(after cursor: Int64?, limit: Int?) async throws -> ChatInterface.Changes.Reply {
        try await client.call(ChatInterface.Changes(cursor: cursor, limit: limit))
    }
    public func conversationSignals(after cursor: Int64) -> AsyncThrowingStream<Int64, any Error> {
        client.sequenceNumbers(of: [ChatConversationCreated.topic, ChatConversationRenamed.topic, ChatConversationDeleted.topic], after: cursor)
    }
    public func history(conversationId: String, cursor: String?, limit: Int?) async throws -> ChatInterface.History.Reply {
        try await client.call(ChatInterface.History(conversationId: conversationId, cursor: cursor, limit: limit))
    }
    public func send(conversationId: String, text: String, model: String?, images: [String]) -> AsyncThrowingStream<SendReply, any Error> {
        client.stream(ChatInterface.Send(conversationId: conversationId, text: text, model: model, images: images.isEmpty ? nil : images))
    }
    public func cancel(messageId: String) async throws {
        _ = try await client.call(ChatInterface.Cancel(messageId: messageId))
    }
}
