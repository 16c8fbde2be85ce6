// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage

/// The changing writes: each logs its event first (`appendLogged`: its sequence is the change's
/// place in the feed), changes the row with its version and `change_seq` in one statement, and
/// stages the method's reply for a keyed call — all in one transaction, in as few round trips
/// (to PostgreSQL) as it can.
extension SQLTodosRepository {
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
                        throw TodosError.conflict(todo: current)
                    }
                    try tx.stageReply(TodosInterface.TodoReply(todo: current))
                    return current
                }
                // The event first: its sequence is the new todo's place in the change feed.
                let due = dueAt.map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 }
                let seq = try tx.appendLogged(TodoCreated(todoId: id, userId: owner, title: title, dueAt: due), causedBy: cause)
                // The account's count and bytes (one row) and the todo in one round trip
                // (PostgreSQL's pipeline); the limits are checked on their answers, and a write
                // past one throws, which rolls both back. Counted in the write (one statement),
                // so concurrent adds cannot pass the quota together.
                let charge = AccountBytes.charging(
                    owner: owner, part: "todos", delta: AccountBytes.size(title, notes), items: 1, limit: storageLimit, dialect: tx.dialect)
                let results = try tx.pipeline(charge.statements + [Self.inserting(owner: owner, id: id, title: title, notes: notes, dueAt: dueAt, now: now, seq: seq, tx.dialect)])
                guard let held = charge.items(results.dropLast()) else {
                    throw StorageError(kind: .other, message: "the account's todo count was not returned")
                }
                guard held <= Int64(limit) else { throw TodosError.quotaExceeded(limit: limit) }
                try charge.verify(results.dropLast())
                // A client's id may be one deleted before: its tombstone goes.
                if clientChosen { try Self.feed.revived(tx, id: id) }
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
                // The event first (its sequence is the change's place in the feed), then one
                // UPDATE; the event carries the title and due time as they will stand.
                let before = try Self.fetch(tx, owner: owner, seq: seq)
                let notesAfter: String? = changes.notes ?? before.notes
                try AccountBytes.charge(
                    tx, owner: owner, part: "todos", delta: AccountBytes.size(changes.title ?? before.title, notesAfter) - AccountBytes.size(before.title, before.notes),
                    limit: storageLimit)
                let due = changes.dueAt.map { $0.map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 } } ?? before.dueAt
                let logged = try tx.appendLogged(TodoUpdated(todoId: full, userId: owner, title: changes.title ?? before.title, dueAt: due), causedBy: cause)
                var sets = ["updated_at = ?", "version = version + 1", "change_seq = ?"]
                var values: [SQLValue] = [.integer(now), .integer(logged)]
                if let title = changes.title {
                    sets.append("title = ?")
                    values.append(.text(title))
                }
                if let notes = changes.notes {
                    sets.append("notes = ?")
                    values.append(notes.map { .text($0) } ?? .null)
                }
                if let due = changes.dueAt {
                    sets.append("due_at = ?")
                    values.append(due.map { .integer($0) } ?? .null)
                }
                try tx.execute("UPDATE todos SET \(sets.joined(separator: ", ")) WHERE owner = ? AND seq = ?", values + [.text(owner), .integer(seq)])
                let todo = try Self.fetch(tx, owner: owner, seq: seq)
                try tx.stageReply(TodosInterface.TodoReply(todo: todo))
                return todo
            }
        }
    }

    func setDone(owner: String, id: String, done: Bool, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> Todo {
        try await retrying {
            try await database.write { tx in
                let (seq, full) = try Self.resolve(tx, owner: owner, id: id)
                let current = try Self.fetch(tx, owner: owner, seq: seq)
                if let expected, current.version != expected { throw TodosError.conflict(todo: current) }
                // Completing a completed todo changes nothing and publishes nothing.
                guard current.done != done else {
                    try tx.stageReply(TodosInterface.TodoReply(todo: current))
                    return current
                }
                let logged =
                    done
                    ? try tx.appendLogged(TodoCompleted(todoId: full, userId: owner), causedBy: cause)
                    : try tx.appendLogged(TodoReopened(todoId: full, userId: owner), causedBy: cause)
                try tx.execute(
                    "UPDATE todos SET done = ?, completed_at = ?, updated_at = ?, version = version + 1, change_seq = ? WHERE owner = ? AND seq = ?",
                    [.integer(done ? 1 : 0), done ? .integer(now) : .null, .integer(now), .integer(logged), .text(owner), .integer(seq)])
                // Built from the row read above and what changed: no need to read it again.
                var todo = current
                todo.done = done
                todo.completedAt = done ? WallTime(nanosecondsSinceEpoch: now).rfc3339 : nil
                todo.updatedAt = WallTime(nanosecondsSinceEpoch: now).rfc3339
                todo.version += 1
                try tx.stageReply(TodosInterface.TodoReply(todo: todo))
                return todo
            }
        }
    }

    /// Adds `file` to the todo's attachments (or, `attach` false, takes it off); the files
    /// plugin was told first (`TodoFiles`). A change like an update: its event, version and feed.
    func setAttachment(
        owner: String, id: String, file: String, attach: Bool, expected: Int64?, now: Int64, causedBy cause: (any Cause)?
    ) async throws -> Todo {
        try await retrying {
            try await database.write { tx in
                let (seq, full) = try Self.resolve(tx, owner: owner, id: id, expecting: expected)
                let before = try Self.fetch(tx, owner: owner, seq: seq)
                var files = before.attachments ?? []
                if attach == files.contains(file) {
                    try tx.stageReply(TodosInterface.TodoReply(todo: before))
                    return before
                }
                if attach {
                    guard files.count < TodoFiles.perTodo else { throw TodosError.validation("fileId", "a todo holds at most \(TodoFiles.perTodo) files; detach one first") }
                    files.append(file)
                } else {
                    files.removeAll { $0 == file }
                }
                let logged = try tx.appendLogged(TodoUpdated(todoId: full, userId: owner, title: before.title, dueAt: before.dueAt), causedBy: cause)
                try tx.execute(
                    "UPDATE todos SET attachments = ?, updated_at = ?, version = version + 1, change_seq = ? WHERE owner = ? AND seq = ?",
                    [files.isEmpty ? .null : .text(files.joined(separator: ",")), .integer(now), .integer(logged), .text(owner), .integer(seq)])
                let todo = try Self.fetch(tx, owner: owner, seq: seq)
                try tx.stageReply(TodosInterface.TodoReply(todo: todo))
                return todo
            }
        }
    }

    /// The full id of the owner's todo `id` (a prefix or ending, as elsewhere).
    func fullID(owner: String, id: String) async throws -> String {
        try await database.read { tx in try Self.resolve(tx, owner: owner, id: id).id }
    }

    /// Deletes the todo; returns its full id and whether it had attachments (they go with it).
    @discardableResult
    func delete(owner: String, id: String, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> (id: String, hadFiles: Bool) {
        try await retrying {
            try await database.write { tx in
                let (seq, full) = try Self.resolve(tx, owner: owner, id: id, expecting: expected)
                let gone = try Self.fetch(tx, owner: owner, seq: seq)
                try AccountBytes.charge(tx, owner: owner, part: "todos", delta: -AccountBytes.size(gone.title, gone.notes), items: -1, limit: storageLimit)
                try tx.execute("DELETE FROM todos WHERE owner = ? AND seq = ?", [.text(owner), .integer(seq)])
                let logged = try tx.appendLogged(TodoDeleted(todoId: full, userId: owner), causedBy: cause)
                try Self.feed.deleted(tx, owner: owner, id: full, seq: logged, now: WallTime(nanosecondsSinceEpoch: now))
                try tx.stageReply(Empty())
                return (full, !(gone.attachments ?? []).isEmpty)
            }
        }
    }

    /// Deletes the owner's completed todos; returns how many, and the ids of those that had
    /// attachments (their files go with them).
    func clearCompleted(owner: String, now: Int64, causedBy cause: (any Cause)?) async throws -> (deleted: Int, withFiles: [String]) {
        try await retrying {
            try await database.write { tx in
                let rows = try tx.query("SELECT id, title, notes, attachments FROM todos WHERE owner = ? AND done = 1", [.text(owner)])
                let ids = rows.compactMap { $0.text("id") }
                let freed = rows.reduce(Int64(0)) { $0 + AccountBytes.size($1.text("title"), $1.text("notes")) }
                try AccountBytes.charge(tx, owner: owner, part: "todos", delta: -freed, items: -Int64(ids.count), limit: storageLimit)
                try tx.execute("DELETE FROM todos WHERE owner = ? AND done = 1", [.text(owner)])
                for id in ids {
                    let logged = try tx.appendLogged(TodoDeleted(todoId: id, userId: owner), causedBy: cause)
                    try Self.feed.deleted(tx, owner: owner, id: id, seq: logged, now: WallTime(nanosecondsSinceEpoch: now))
                }
                try tx.stageReply(TodosInterface.Cleared(deleted: ids.count))
                return (ids.count, rows.filter { !($0.text("attachments") ?? "").isEmpty }.compactMap { $0.text("id") })
            }
        }
    }

    /// Erasure of a deleted account's todos and their tombstones.
    func deleteAll(owner: String) async throws -> Int {
        try await retrying {
            try await database.write { tx in
                try AccountBytes.reset(tx, owner: owner, part: "todos")
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
            let current = try fetch(tx, owner: owner, seq: found.seq)
            guard current.version == expected else { throw TodosError.conflict(todo: current) }
        }
        return found
    }
}
