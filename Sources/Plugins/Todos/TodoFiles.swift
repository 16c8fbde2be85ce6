// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// A todo's attachments, as the files plugin keeps them: each file attached goes with the todo
/// (`AttachFile` to the item `todos.<id>`), and is deleted when detached or with the todo
/// (`ReleaseFiles`). Without the files plugin nothing can be attached.
struct TodoFiles: Sendable {
    /// Files one todo holds.
    static let perTodo = 10

    let bus: EventBus
    let logger: Logger

    static func item(_ todo: String) -> String { "todos." + todo }

    /// Makes the owner's `file` go with `todo`; throws `TodosError` when it cannot.
    func attach(_ file: String, to todo: String, owner: String) async throws {
        do {
            _ = try await bus.send(AttachFile(owner: owner, id: file, item: Self.item(todo)), as: .plugin("todos"))
        } catch {
            guard let why = AttachFile.refusal(of: file, error) else { throw error }
            throw TodosError.validation("fileId", why)
        }
    }

    /// Deletes the files of `todo` but `keeping` (a failure is logged: the files stay the
    /// user's, listed with their usedBy, and the next release deletes them).
    func release(_ todo: String, owner: String, keeping: [String] = []) async {
        do {
            _ = try await bus.send(ReleaseFiles(owner: owner, item: Self.item(todo), keeping: keeping), as: .plugin("todos"))
        } catch is NoHandler {
        } catch {
            logger.error("a todo's files could not be deleted", metadata: ["todo": "\(todo)", "error": "\(error)"])
        }
    }
}
