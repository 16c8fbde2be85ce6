// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

extension TodosPlugin {
    /// The user's todos (deleted ones are gone: their tombstones hold only an id).
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? {
        try await UserDataQuery.run(
            [UserDataQuery("todos", "SELECT id, title, notes, done, due_at, created_at, updated_at, completed_at, version FROM todos WHERE owner = ? ORDER BY seq")],
            user: user, in: context.database)
    }
}
