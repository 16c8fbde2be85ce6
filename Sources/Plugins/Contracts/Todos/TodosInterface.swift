// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Todos`: a signed-in, onboarded user's own todos.
public enum TodosInterface {
    public static let idl = """
        # Todos. Each user sees and changes only their own; another user's todo is NotFound.
        # Every method needs a signed-in, onboarded account. Ids may be shortened to any unique
        # prefix of at least 4 characters, or when no todo's id begins so, any unique ending
        # (ids the server makes begin with their time), in any case (too short or ambiguous:
        # ValidationFailed).
        # Offline clients: every change may carry an idempotency key (a retry has its effect
        # once); Add takes an id the client made; Update, Complete, Reopen and Delete take the
        # version the client last saw (a change made meanwhile elsewhere is a Conflict); Changes
        # brings a client up to date, then io.appd.Bus.Subscribe continues from its cursor.
        interface io.appd.Todos

        type Todo (
          id: string,
          title: string,
          notes: ?string,
          done: bool,
          # RFC 3339, UTC.
          dueAt: ?string,
          createdAt: string,
          updatedAt: string,
          completedAt: ?string,
          # Goes up by one with every change.
          version: int,
          # Files of io.appd.Files attached (Attach), deleted with the todo.
          attachments: ?[]string
        )

        # One change in a pull: the todo as it stands now, or for a deletion only its id.
        type TodoChange (
          # Where the change sits on the event log's sequence.
          seq: int,
          id: string,
          deleted: bool,
          todo: ?Todo
        )

        # Adds a todo. Title: 1 to 200 characters; notes: up to 10,000; dueAt: RFC 3339.
        # id: one the client made, t_ and a UUID in lowercase (AppdClient's Todo.newID()),
        # which is then the todo's id everywhere; a bare UUID is taken as t_ and it in lowercase;
        # adding it again with the same title, notes and dueAt returns that todo, with others
        # is a Conflict carrying it.
        method Add(title: string, notes: ?string, dueAt: ?string, id: ?string) -> (todo: Todo)

        method Get(id: string) -> (todo: Todo)

        # Lists todos oldest first. Pass nextCursor back as cursor for the next page; pages stay
        # correct while todos are added and deleted in between.
        method List(filter: ?(all, open, done), cursor: ?string, limit: ?int) -> (todos: []Todo, nextCursor: ?string)

        # Changes the fields given; an empty string clears notes or dueAt. With
        # expectedVersion, a todo changed since (another version) is a Conflict.
        method Update(id: string, title: ?string, notes: ?string, dueAt: ?string, expectedVersion: ?int) -> (todo: Todo)

        method Complete(id: string, expectedVersion: ?int) -> (todo: Todo)

        method Reopen(id: string, expectedVersion: ?int) -> (todo: Todo)

        method Delete(id: string, expectedVersion: ?int) -> ()

        # Deletes every completed todo.
        method ClearCompleted() -> (deleted: int)

        # Attaches a file the user uploaded (POST /files), up to 10 a todo: it then goes with the
        # todo (deleted with it, or when detached). Attaching it again changes nothing. A file
        # that is not the user's, or is another item's already, is ValidationFailed (fileId).
        method Attach(id: string, fileId: string, expectedVersion: ?int) -> (todo: Todo)

        # Detaches a file, which is deleted.
        method Detach(id: string, fileId: string, expectedVersion: ?int) -> (todo: Todo)

        # What changed after 'cursor', oldest first: each changed todo as it stands, each
        # deleted one as a tombstone. Without a cursor: every todo (a first pull). Pull with
        # nextCursor until 'more' is false; that nextCursor is then also the 'since' for
        # io.appd.Bus.Subscribe, which continues with no gap and no repeat. A cursor older than
        # the deletions kept (tombstoneDays) is ResyncRequired. limit: 1 to 500 (default 100).
        method Changes(cursor: ?int, limit: ?int) -> (changes: []TodoChange, nextCursor: int, more: bool)

        # category: invalid
        error ValidationFailed (field: string, reason: string)
        # category: notFound
        error NotFound ()
        # The account holds as many todos as it may ('limit'); delete some first.
        # category: forbidden
        error QuotaExceeded (limit: int)
        # The todo is not at the version expected, or an Add's id holds another todo: 'todo'
        # is the todo as it stands; the server's version wins, the client decides what to do.
        # category: conflict
        error Conflict (todo: Todo)
        # The cursor is older than the deletions kept: pull again without a cursor.
        # category: gone
        error ResyncRequired (reason: string)

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [
        Add.self, Get.self, List.self, Update.self, Complete.self, Reopen.self, Delete.self, ClearCompleted.self, Changes.self, Attach.self, Detach.self,
    ]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = TodosError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }

    public static let needs: [Requirement] = [.session, .onboarded]
    /// Changes keep their first outcome for a retry with the same idempotency key.
    public static let changes: [Requirement] = [.session, .onboarded, .idempotent]

    public struct Add: Command {
        public static let method = "io.appd.Todos.Add"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = TodoReply
        public var title: String
        public var notes: String?
        public var dueAt: String?
        public var id: String?
        public init(title: String, notes: String? = nil, dueAt: String? = nil, id: String? = nil) {
            self.title = title
            self.notes = notes
            self.dueAt = dueAt
            self.id = id
        }
    }
    public struct Get: Command {
        public static let method = "io.appd.Todos.Get"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public typealias Reply = TodoReply
        public var id: String
        public init(id: String) {
            self.id = id
        }
    }
    public struct List: Command {
        public static let method = "io.appd.Todos.List"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public typealias Reply = TodoPage
        public var filter: String?
        public var cursor: String?
        public var limit: Int?
        public init(filter: String? = nil, cursor: String? = nil, limit: Int? = nil) {
            self.filter = filter
            self.cursor = cursor
            self.limit = limit
        }
    }
    public struct Update: Command {
        public static let method = "io.appd.Todos.Update"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = TodoReply
        public var id: String
        public var title: String?
        public var notes: String?
        public var dueAt: String?
        public var expectedVersion: Int64?
        public init(id: String, title: String? = nil, notes: String? = nil, dueAt: String? = nil, expectedVersion: Int64? = nil) {
            self.id = id
            self.title = title
            self.notes = notes
            self.dueAt = dueAt
            self.expectedVersion = expectedVersion
        }
    }
    public struct Complete: Command {
        public static let method = "io.appd.Todos.Complete"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = TodoReply
        public var id: String
        public var expectedVersion: Int64?
        public init(id: String, expectedVersion: Int64? = nil) {
            self.id = id
            self.expectedVersion = expectedVersion
        }
    }
    public struct Reopen: Command {
        public static let method = "io.appd.Todos.Reopen"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = TodoReply
        public var id: String
        public var expectedVersion: Int64?
        public init(id: String, expectedVersion: Int64? = nil) {
            self.id = id
            self.expectedVersion = expectedVersion
        }
    }
    public struct Attach: Command {
        public static let method = "io.appd.Todos.Attach"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = TodoReply
        public var id: String
        public var fileId: String
        public var expectedVersion: Int64?
        public init(id: String, fileId: String, expectedVersion: Int64? = nil) {
            self.id = id
            self.fileId = fileId
            self.expectedVersion = expectedVersion
        }
    }
    public struct Detach: Command {
        public static let method = "io.appd.Todos.Detach"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = TodoReply
        public var id: String
        public var fileId: String
        public var expectedVersion: Int64?
        public init(id: String, fileId: String, expectedVersion: Int64? = nil) {
            self.id = id
            self.fileId = fileId
            self.expectedVersion = expectedVersion
        }
    }
    public struct Delete: Command {
        public static let method = "io.appd.Todos.Delete"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = Empty
        public var id: String
        public var expectedVersion: Int64?
        public init(id: String, expectedVersion: Int64? = nil) {
            self.id = id
            self.expectedVersion = expectedVersion
        }
    }
    public struct ClearCompleted: Command {
        public static let method = "io.appd.Todos.ClearCompleted"
        public static var requirements: [Requirement] { changes }
        public typealias Reply = Cleared
        public init() {}
    }

    public struct Changes: Command {
        public static let method = "io.appd.Todos.Changes"
        public static let readsOnly = true
        public static var requirements: [Requirement] { needs }
        public typealias Reply = ChangePage
        public var cursor: Int64?
        public var limit: Int?
        public init(cursor: Int64? = nil, limit: Int? = nil) {
            self.cursor = cursor
            self.limit = limit
        }
    }

    public struct TodoReply: Codable, Sendable {
        public var todo: Todo
        public init(todo: Todo) {
            self.todo = todo
        }
    }
    public struct ChangePage: Codable, Sendable {
        public var changes: [TodoChange]
        public var nextCursor: Int64
        public var more: Bool
        public init(changes: [TodoChange], nextCursor: Int64, more: Bool) {
            self.changes = changes
            self.nextCursor = nextCursor
            self.more = more
        }
    }
    public struct TodoPage: Codable, Sendable {
        public var todos: [Todo]
        public var nextCursor: String?
        public init(todos: [Todo], nextCursor: String? = nil) {
            self.todos = todos
            self.nextCursor = nextCursor
        }
    }
    public struct Cleared: Codable, Sendable {
        public var deleted: Int
        public init(deleted: Int) {
            self.deleted = deleted
        }
    }
}

public struct Todo: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var title: String
    public var notes: String?
    public var done: Bool
    public var dueAt: String?
    public var createdAt: String
    public var updatedAt: String
    public var completedAt: String?
    public var version: Int64
    /// Files attached (`Todos.Attach`), if any.
    public var attachments: [String]?
    public init(
        id: String, title: String, notes: String? = nil, done: Bool, dueAt: String? = nil, createdAt: String, updatedAt: String, completedAt: String? = nil, version: Int64,
        attachments: [String]? = nil
    ) {
        self.id = id
        self.title = title
        self.notes = notes
        self.done = done
        self.dueAt = dueAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.completedAt = completedAt
        self.version = version
        self.attachments = attachments
    }
}

/// One change in a pull (`Todos.Changes`): the todo as it stands, or a deleted todo's id.
public struct TodoChange: Codable, Sendable, Hashable, Identifiable {
    public var seq: Int64
    public var id: String
    public var deleted: Bool
    public var todo: Todo?
    public init(seq: Int64, id: String, deleted: Bool, todo: Todo? = nil) {
        self.seq = seq
        self.id = id
        self.deleted = deleted
        self.todo = todo
    }
}
