// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import PluginKit

/// The todo rules: validation, cursor paging, owner scoping (through the repository).
struct TodosService: Sendable {
    static let defaultPageSize = 50
    static let maxPageSize = 500
    static let titleLimit = TextLimit(characters: 200)
    static let notesLimit = TextLimit(characters: 10_000)

    let repository: any TodosRepository
    let clock: @Sendable () -> WallTime
    var maxTodosPerUser = 10_000

    var now: Int64 { clock().nanosecondsSinceEpoch }

    static func title(_ raw: String) throws(TodosError) -> String {
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty else { throw .validation("title", "is required") }
        if let problem = titleLimit.violation(of: trimmed) { throw .validation("title", problem) }
        return trimmed
    }

    static func notes(_ raw: String?) throws(TodosError) -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        if let problem = notesLimit.violation(of: raw) { throw .validation("notes", problem) }
        return raw
    }

    static func due(_ raw: String?) throws(TodosError) -> Int64? {
        guard let raw, !raw.isEmpty else { return nil }
        guard let time = RFC3339.parse(raw) else { throw .validation("dueAt", "needs an RFC 3339 time like 2026-12-24T18:00:00Z") }
        return time.nanosecondsSinceEpoch
    }

    func add(owner: String, title: String, notes: String?, dueAt: String?, id: String?, causedBy cause: (any Cause)?) async throws -> Todo {
        let chosen = try id.map { text throws(TodosError) in
            guard let id = ClientID.canonical(text, prefix: "t_") else { throw .validation("id", ClientID.expected) }
            return id
        }
        return try await repository.add(
            owner: owner, id: try chosen ?? RecordID.generate(prefix: "t_", now: clock()), clientChosen: chosen != nil, title: try Self.title(title),
            notes: try Self.notes(notes), dueAt: try Self.due(dueAt), now: now, limit: maxTodosPerUser, causedBy: cause)
    }

    static let defaultChangesPage = 100

    func changes(owner: String, cursor: Int64?, limit: Int?) async throws -> TodosInterface.ChangePage {
        try await repository.changes(owner: owner, after: cursor, limit: min(max(limit ?? Self.defaultChangesPage, 1), Self.maxPageSize))
    }

    func list(owner: String, filter: String?, cursor: String?, limit: Int?) async throws -> TodosInterface.TodoPage {
        let size = min(max(limit ?? Self.defaultPageSize, 1), Self.maxPageSize)
        var after: Int64 = 0
        if let cursor, !cursor.isEmpty {
            guard let value = Int64(cursor), value >= 0 else { throw TodosError.validation("cursor", "is not a cursor from a previous page") }
            after = value
        }
        let (todos, last, more) = try await repository.list(owner: owner, filter: filter ?? "all", after: after, limit: size)
        // The cursor is the position of the last todo shown: new todos come after it and deleted
        // ones leave no gap, so pages never repeat or skip while the list changes. A page its
        // byte budget ended early has a cursor too.
        return TodosInterface.TodoPage(todos: todos, nextCursor: more ? last.map { String($0) } : nil)
    }

    func update(
        owner: String, id: String, title: String?, notes: String?, dueAt: String?, expected: Int64?, causedBy cause: (any Cause)?
    ) async throws -> Todo {
        var changes = TodoChanges()
        if let title { changes.title = try Self.title(title) }
        if let notes { changes.notes = .some(try Self.notes(notes)) }
        if let dueAt { changes.dueAt = .some(try Self.due(dueAt)) }
        return try await repository.update(owner: owner, id: id, changes: changes, expected: expected, now: now, causedBy: cause)
    }
}
