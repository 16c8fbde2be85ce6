// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Foundation

/// The composition root: the one place that knows the server's address, where the session and
/// the offline copy are kept, and which implementation each screen gets. Tests build the same
/// screens over AppdClientTesting's fakes instead.
@MainActor
public final class AppContainer {
    public let appd: AppdClient
    public let session: SessionController
    public let todos: OfflineTodos
    private var syncing: Task<Void, Never>?

    /// `folder` holds the session (on an iPhone: use `KeychainTokenStore()`) and the offline copy.
    public init(server: URL, folder: String) {
        #if canImport(Security)
        let tokens: any TokenStore = KeychainTokenStore()
        #else
        let tokens: any TokenStore = FileTokenStore(path: folder + "/session.json")
        #endif
        appd = AppdClient(baseURL: server, tokenStore: tokens)
        session = SessionController(auth: appd.auth)
        todos = OfflineTodos(service: appd.todos, store: FileOfflineTodosStore(path: folder + "/todos.json"))
    }

    public func signIn() -> SignInViewModel { SignInViewModel(auth: appd.auth) }
    public func todoList() -> TodoListViewModel { TodoListViewModel(repository: todos) }
    public func chat(_ conversationId: String) -> ChatViewModel { ChatViewModel(chat: appd.chat, conversationId: conversationId) }

    /// Keeps the offline copy and appd together while signed in (the app calls it when the
    /// route becomes home, and `stopSync()` when it leaves).
    public func startSync() {
        guard syncing == nil else { return }
        let todos = self.todos
        syncing = Task { await todos.run() }
    }

    public func stopSync() {
        syncing?.cancel()
        syncing = nil
    }
}
