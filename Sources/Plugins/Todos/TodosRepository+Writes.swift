import Bus
import Contracts
import PluginKit
import Storage

/// The changing writes: each logs its event (`appendLogged`, for the sequence), records the
/// change in the feed, raises the todo's version, and stages the method's reply for a keyed
/// call — all in one transaction.
extension SQLiteTodosRepository {
    func add(
        owner: String, id: String, clientChosen: Bool, title: String, notes: String?, dueAt: Int64?, now: Int64, limit: Int,
        causedBy cause: (any Cause)?
    ) async throws -> Todo {
        try await retrying {
            try await database.write { tx in
                if clientChosen, let existing = try tx.query("SELECT * FROM todos WHERE id = ?", [.text(id)]).first {
                    // Added before (a retry without a key, or another device with the same id).
                    guard existing.text("owner") == owner, let current = Self.todo(existing) else {
                        throw TodosError.validation("id", "is taken; make a new UUID")
                    }
                    guard existing.text("title") == title, existing.text("notes") == notes, existing.integer("due_at") == dueAt else {
                        throw TodosError.conflict(current)
                    }
                    try tx.stageReply(TodosInterface.TodoReply(todo: current))
                    return current
                }
                // Counted in the write, so concurrent adds cannot pass the quota together.
                try Self.count(tx, owner: owner, by: 1)
                let held = try tx.query("SELECT n FROM todos_counts WHERE owner = ?", [.text(owner)]).first?.integer("n") ?? 0
                guard held <= Int64(limit) else { throw TodosError.quotaExceeded(limit) }
                try tx.execute(
                    "INSERT INTO todos (id, owner, title, notes, due_at, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                    [.text(id), .text(owner), .text(title), notes.map { .text($0) } ?? .null, dueAt.map { .integer($0) } ?? .null, .integer(now), .integer(now)])
                let seq = try tx.appendLogged(TodoCreated(todoId: id, userId: owner, title: title), causedBy: cause)
                try Self.feed.changed(tx, id: id, seq: seq, added: true)
                // Built from what was just inserted: no need to read the row back.
                let created = WallTime(nanosecondsSinceEpoch: now).rfc3339
                let todo = Todo(
                    id: id, title: title, notes: notes, done: false, dueAt: dueAt.map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 },
                    createdAt: created, updatedAt: created, completedAt: nil, version: 1)
                try tx.stageReply(TodosInterface.TodoReply(todo: todo))
                return todo
            }
        }
    }

    func update(owner: String, id: String, changes: TodoChanges, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> Todo {
        try await retrying {
            try await database.write { tx in
                let (seq, full) = try Self.resolve(tx, owner: owner, id: id, expecting: expected)
                if let title = changes.title {
                    try tx.execute("UPDATE todos SET title = ? WHERE seq = ?", [.text(title), .integer(seq)])
                }
                if let notes = changes.notes {
                    try tx.execute("UPDATE todos SET notes = ? WHERE seq = ?", [notes.map { .text($0) } ?? .null, .integer(seq)])
                }
                if let due = changes.dueAt {
                    try tx.execute("UPDATE todos SET due_at = ? WHERE seq = ?", [due.map { .integer($0) } ?? .null, .integer(seq)])
                }
                try tx.execute("UPDATE todos SET updated_at = ?, version = version + 1 WHERE seq = ?", [.integer(now), .integer(seq)])
                let logged = try tx.appendLogged(TodoUpdated(todoId: full, userId: owner), causedBy: cause)
                try Self.feed.changed(tx, id: full, seq: logged)
                let todo = try Self.fetch(tx, seq: seq)
                try tx.stageReply(TodosInterface.TodoReply(todo: todo))
                return todo
            }
        }
    }

    func setDone(owner: String, id: String, done: Bool, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> Todo {
        try await retrying {
            try await database.write { tx in
                let (seq, full) = try Self.resolve(tx, owner: owner, id: id, expecting: expected)
                let changed = try tx.execute(
                    "UPDATE todos SET done = ?, completed_at = ?, updated_at = ?, version = version + 1 WHERE seq = ? AND done = ?",
                    [.integer(done ? 1 : 0), done ? .integer(now) : .null, .integer(now), .integer(seq), .integer(done ? 0 : 1)])
                // Completing a completed todo changes nothing and publishes nothing.
                if changed > 0 {
                    let logged =
                        done
                        ? try tx.appendLogged(TodoCompleted(todoId: full, userId: owner), causedBy: cause)
                        : try tx.appendLogged(TodoReopened(todoId: full, userId: owner), causedBy: cause)
                    try Self.feed.changed(tx, id: full, seq: logged)
                }
                let todo = try Self.fetch(tx, seq: seq)
                try tx.stageReply(TodosInterface.TodoReply(todo: todo))
                return todo
            }
        }
    }

    func delete(owner: String, id: String, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws {
        try await retrying {
            try await database.write { tx in
                let (seq, full) = try Self.resolve(tx, owner: owner, id: id, expecting: expected)
                try tx.execute("DELETE FROM todos WHERE seq = ?", [.integer(seq)])
                try Self.count(tx, owner: owner, by: -1)
                let logged = try tx.appendLogged(TodoDeleted(todoId: full, userId: owner), causedBy: cause)
                try Self.feed.deleted(tx, owner: owner, id: full, seq: logged, now: WallTime(nanosecondsSinceEpoch: now))
                try tx.stageReply(Empty())
            }
        }
    }

    func clearCompleted(owner: String, now: Int64, causedBy cause: (any Cause)?) async throws -> Int {
        try await retrying {
            try await database.write { tx in
                let ids = try tx.query("SELECT id FROM todos WHERE owner = ? AND done = 1", [.text(owner)]).compactMap { $0.text("id") }
                try tx.execute("DELETE FROM todos WHERE owner = ? AND done = 1", [.text(owner)])
                try Self.count(tx, owner: owner, by: -ids.count)
                for id in ids {
                    let logged = try tx.appendLogged(TodoDeleted(todoId: id, userId: owner), causedBy: cause)
                    try Self.feed.deleted(tx, owner: owner, id: id, seq: logged, now: WallTime(nanosecondsSinceEpoch: now))
                }
                try tx.stageReply(TodosInterface.Cleared(deleted: ids.count))
                return ids.count
            }
        }
    }

    /// Erasure of a deleted account's todos and their tombstones.
    func deleteAll(owner: String) async throws -> Int {
        try await retrying {
            try await database.write { tx in
                try tx.execute("DELETE FROM todos_counts WHERE owner = ?", [.text(owner)])
                try Self.feed.erase(tx, owner: owner)
                return try tx.execute("DELETE FROM todos WHERE owner = ?", [.text(owner)])
            }
        }
    }

    /// `resolve`, then the version check: a todo at another version than `expected` is a
    /// `Conflict` carrying it.
    static func resolve(_ tx: any Transaction, owner: String, id: String, expecting expected: Int64?) throws -> (seq: Int64, id: String) {
        let found = try resolve(tx, owner: owner, id: id)
        if let expected {
            let current = try fetch(tx, seq: found.seq)
            guard current.version == expected else { throw TodosError.conflict(current) }
        }
        return found
    }
}
