// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Foundation
import Observation

/// The todo list: reads and edits the offline copy at once (the screen never waits for the
/// network), and shows conflicts for the user to decide. `OfflineTodos.run()` keeps the copy
/// and appd together in the background.
@MainActor @Observable
public final class TodoListViewModel {
    public private(set) var todos: [Todo] = []
    public private(set) var conflicts: [TodoConflict] = []
    public private(set) var unsent = 0
    public private(set) var error: AppError?
    private let repository: OfflineTodos

    public init(repository: OfflineTodos) { self.repository = repository }

    /// Shows the copy and every change to it until the calling task is cancelled.
    public func observe() async {
        do {
            for await snapshot in try await repository.snapshots() {
                todos = snapshot.todos
                conflicts = snapshot.conflicts
                unsent = snapshot.pending.count
            }
        } catch {
            self.error = AppError(error)
        }
    }

    public func add(_ title: String, due: Date? = nil) async { await run { _ = try await $0.add(title: title, due: due) } }
    public func toggle(_ todo: Todo) async {
        await run { todos in
            if todo.done { try await todos.reopen(id: todo.id) } else { try await todos.complete(id: todo.id) }
        }
    }
    public func rename(_ todo: Todo, to title: String) async { await run { _ = try await $0.update(id: todo.id, TodoEdit(title: title)) } }
    public func delete(_ todo: Todo) async { await run { try await $0.delete(id: todo.id) } }
    public func keepMine(_ conflict: TodoConflict) async { await run { try await $0.resolve(conflict.todoId, .keepMine) } }
    public func keepTheirs(_ conflict: TodoConflict) async { await run { try await $0.resolve(conflict.todoId, .keepServer) } }

    /// Pull-to-refresh: sends what is queued and pulls what changed.
    public func refresh() async { await run { try await $0.sync() } }

    private func run(_ action: (OfflineTodos) async throws -> Void) async {
        do {
            try await action(repository)
            error = nil
        } catch {
            self.error = AppError(error)
        }
    }
}
