// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage

/// The changes an Update asks for: nil leaves a field alone; for notes and dueAt, `.some(nil)`
/// clears it.
struct TodoChanges: Sendable {
    var title: String?
    var notes: String??
    var dueAt: Int64??
}

/// The todos repository boundary: plugins' logic talks to this, never to SQL.
protocol TodosRepository: Sendable {
    /// Adds a todo unless the owner already holds `limit` (`QuotaExceeded`). With a client's
    /// id (`clientChosen`), an existing todo of that id with the same content is returned as it
    /// is, one with other content is a `Conflict`.
    func add(owner: String, id: String, clientChosen: Bool, title: String, notes: String?, dueAt: Int64?, now: Int64, limit: Int, causedBy cause: (any Cause)?) async throws -> Todo
    func get(owner: String, id: String) async throws -> Todo
    /// The owner's todos after position `after`, oldest first, at most `limit`; the position of
    /// the last of them (the paging cursor); and whether more may follow (a todo past `limit`,
    /// or the page's byte budget ended it early).
    func list(owner: String, filter: String, after: Int64, limit: Int) async throws -> (todos: [Todo], last: Int64?, more: Bool)
    /// The changing methods take the version the client expects (nil: any): another is a `Conflict`.
    func update(owner: String, id: String, changes: TodoChanges, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> Todo
    func setDone(owner: String, id: String, done: Bool, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> Todo
    /// Its full id, and whether it had attachments (they go with it).
    @discardableResult
    func delete(owner: String, id: String, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> (id: String, hadFiles: Bool)
    /// How many, and the ids of those that had attachments.
    func clearCompleted(owner: String, now: Int64, causedBy cause: (any Cause)?) async throws -> (deleted: Int, withFiles: [String])
    /// Adds `file` to the todo's attachments, or (`attach` false) takes it off.
    func setAttachment(owner: String, id: String, file: String, attach: Bool, expected: Int64?, now: Int64, causedBy cause: (any Cause)?) async throws -> Todo
    /// The full id of the owner's todo given by `id` (a prefix or an ending of it).
    func fullID(owner: String, id: String) async throws -> String
    func deleteAll(owner: String) async throws -> Int
    /// The owner's changes after `cursor` (nil: every todo), at most `limit`.
    func changes(owner: String, after cursor: Int64?, limit: Int) async throws -> TodosInterface.ChangePage
}

/// `TodosRepository` over the storage `Database`: owner-scoped queries (another user's todo
/// is simply not found), events in the same transaction, retry when the database is busy.
struct SQLTodosRepository: TodosRepository {
    let database: any Database
    /// The bytes of text one account may keep, across plugins (`AccountBytes`; 0: no limit).
    var storageLimit: Int64 = TodosPlugin.defaultStorageLimit
    /// The per-owner change feed over the todos table (migration 3).
    static let feed = ChangeFeed(table: "todos", measured: ["title", "notes"])
    /// A page of todos ends at this many bytes of titles and notes, or at its count.
    static let page = BytePage(columns: ["title", "notes"])

    /// What a read of todos selects: the place (`seq`) and the columns `todo(_:)` reads, in the
    /// order they are read. Not `owner` (the query names it already: a string per row that
    /// nothing reads) nor `change_seq`.
    static let readColumns = "seq, id, title, created_at, updated_at, notes, done, due_at, completed_at, version, attachments"

    static func todo(_ row: Row) -> Todo? {
        func time(_ column: String) -> String? { row.integer(column).map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 } }
        guard let id = row.text("id"), let title = row.text("title"), let created = time("created_at"), let updated = time("updated_at")
        else { return nil }
        return Todo(
            id: id, title: title, notes: row.text("notes"), done: row.integer("done") == 1, dueAt: time("due_at"),
            createdAt: created, updatedAt: updated, completedAt: time("completed_at"), version: row.integer("version") ?? 1,
            attachments: row.text("attachments").flatMap { $0.isEmpty ? nil : $0.split(separator: ",").map(String.init) })
    }

    /// The full id for an id, a unique prefix of it, or (when no id begins so) a unique ending
    /// of it, among the owner's todos: ids the server makes begin with their time (`RecordID`),
    /// so what tells two apart by hand is at their end.
    /// Ids may be given with or without their `t_` (what a list shows after it, typed by hand);
    /// text that begins with `t_` is tried as given first, then as the part after the `t_` (a
    /// random part may itself begin with `t_`).
    static func resolve(_ tx: any Transaction, owner: String, id given: String) throws -> (seq: Int64, id: String) {
        var attempts: [(any Transaction) throws -> (seq: Int64, id: String)] = []
        if given.lowercased().hasPrefix("t_") { attempts.append { try lookup($0, owner: owner, id: given) } }
        attempts.append { try lookup($0, owner: owner, id: "t_" + given) }
        attempts.append { try lookup($0, owner: owner, ending: given) }
        for (i, attempt) in attempts.enumerated() {
            do {
                return try attempt(tx)
            } catch let error as TodosError where error == .notFound && i < attempts.count - 1 {
                continue
            }
        }
        throw TodosError.notFound
    }

    private static func lookup(_ tx: any Transaction, owner: String, id: String) throws -> (seq: Int64, id: String) {
        guard id.utf8.count <= 66, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) else {
            throw TodosError.notFound
        }
        guard id.utf8.count >= 4 else { throw TodosError.validation("id", "is too short: give at least 4 characters of it (t_ and two more)") }
        // The exact id first; otherwise a prefix, in any case (a prefix typed by hand).
        if let row = try tx.query("SELECT seq, id FROM todos WHERE owner = ? AND id = ?", [.text(owner), .text(id)]).first,
            let seq = row.integer("seq"), let full = row.text("id")
        {
            return (seq, full)
        }
        let rows = try tx.query(
            "SELECT seq, id FROM todos WHERE owner = ? AND lower(substr(id, 1, ?)) = lower(?) LIMIT 10",
            [.text(owner), .integer(Int64(id.utf8.count)), .text(id)])
        return try unique(rows)
    }

    /// The one todo whose id ends with `ending` (at least 4 characters, any case).
    private static func lookup(_ tx: any Transaction, owner: String, ending: String) throws -> (seq: Int64, id: String) {
        guard ending.utf8.count >= 4, ending.utf8.count <= 66, ending.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { throw TodosError.notFound }
        let rows = try tx.query(
            // From the end counted from the start: PostgreSQL's substr takes no negative start.
            "SELECT seq, id FROM todos WHERE owner = ? AND lower(substr(id, length(id) - ? + 1)) = lower(?) LIMIT 10",
            [.text(owner), .integer(Int64(ending.utf8.count)), .text(ending)])
        return try unique(rows)
    }

    private static func unique(_ rows: [Row]) throws -> (seq: Int64, id: String) {
        guard let first = rows.first, let seq = first.integer("seq"), let full = first.text("id") else { throw TodosError.notFound }
        guard rows.count == 1 else {
            throw TodosError.validation("id", "is ambiguous: it matches \(rows.count == 10 ? "10 or more" : String(rows.count)) todos; give more characters")
        }
        return (seq, full)
    }

    static func fetch(_ tx: any Transaction, owner: String, seq: Int64) throws -> Todo {
        guard let todo = try tx.query("SELECT \(readColumns) FROM todos WHERE owner = ? AND seq = ?", [.text(owner), .integer(seq)]).first.flatMap(todo) else {
            throw TodosError.notFound
        }
        return todo
    }

    func get(owner: String, id: String) async throws -> Todo {
        try await retrying {
            try await database.read { tx in try Self.fetch(tx, owner: owner, seq: try Self.resolve(tx, owner: owner, id: id).seq) }
        }
    }

    func list(owner: String, filter: String, after: Int64, limit: Int) async throws -> (todos: [Todo], last: Int64?, more: Bool) {
        try await retrying {
            try await database.read { tx in
                let condition = filter == "open" ? " AND done = 0" : filter == "done" ? " AND done = 1" : ""
                // One row past the page says whether more follow.
                let (rows, cut) = try Self.page.rows(
                    "SELECT \(Self.readColumns) FROM todos WHERE owner = ? AND seq > ?\(condition) ORDER BY seq LIMIT ?", orderBy: "seq",
                    [.text(owner), .integer(after), .integer(Int64(limit) + 1)], in: tx)
                // The page is made here, on the database's thread, as the reply will carry it:
                // the caller's thread gets the array and copies no todo.
                var todos: [Todo] = []
                todos.reserveCapacity(min(rows.count, limit))
                var last: Int64?
                for row in rows.prefix(limit) {
                    guard let seq = row.integer("seq"), let todo = Self.todo(row) else { continue }
                    todos.append(todo)
                    last = seq
                }
                return (todos, last, cut || rows.count > limit)
            }
        }
    }

    func changes(owner: String, after cursor: Int64?, limit: Int) async throws -> TodosInterface.ChangePage {
        // The caller's own writes are in the page (see `EventLog.settle`).
        try await EventLog(database: database).settle()
        return try await retrying {
            try await database.read { tx in
                do {
                    let page = try Self.feed.changes(tx, owner: owner, after: cursor, limit: limit, item: Self.todo)
                    let changes = page.changes.map { TodoChange(seq: $0.seq, id: $0.id, deleted: $0.item == nil, todo: $0.item) }
                    return TodosInterface.ChangePage(changes: changes, nextCursor: page.next, more: page.more)
                } catch let stale as ChangeFeed.ResyncNeeded {
                    throw TodosError.resyncRequired(reason: stale.description)
                }
            }
        }
    }

    /// The statement that stores a new todo. SQLite's table is keyed by owner and place
    /// (`WITHOUT ROWID`, migration 7): the place is the todo's created event's sequence, or one
    /// past the owner's newest when that is higher (todos placed before by a counter of their
    /// own), so an owner's todos stay in the order they were added and a place is not taken
    /// again after its todo was deleted. PostgreSQL's table keeps its identity key.
    static func inserting(owner: String, id: String, title: String, notes: String?, dueAt: Int64?, now: Int64, seq: Int64, _ dialect: SQLDialect) -> SQLStatement {
        let values: [SQLValue] = [
            .text(id), .text(owner), .text(title), notes.map { .text($0) } ?? .null, dueAt.map { .integer($0) } ?? .null, .integer(now), .integer(now), .integer(seq),
        ]
        guard dialect == .sqlite else {
            return SQLStatement(
                "INSERT INTO todos (id, owner, title, notes, due_at, created_at, updated_at, version, change_seq) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)", values)
        }
        return SQLStatement(
            "INSERT INTO todos (id, owner, title, notes, due_at, created_at, updated_at, version, change_seq, seq) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, "
                + "max(?, COALESCE((SELECT MAX(seq) FROM todos WHERE owner = ?), 0) + 1))", values + [.integer(seq), .text(owner)])
    }

    /// Retries work the database refused as busy, with a short backoff, three times.
    func retrying<T: Sendable>(_ work: () async throws -> T) async throws -> T {
        var delay = Duration.milliseconds(10)
        for _ in 0..<3 {
            do {
                return try await work()
            } catch let error as StorageError where error.kind == .busy {
                try await Task.sleep(for: delay)
                delay *= 4
            }
        }
        return try await work()
    }
}
