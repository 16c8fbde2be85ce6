import Bus

/// `io.appd.Todos`: a signed-in, onboarded user's own todos.
enum TodosInterface {
    static let idl = """
        # Todos. Each user sees and changes only their own; another user's todo is NotFound.
        # Every method needs a signed-in, onboarded account. Ids may be shortened to any unique
        # prefix of at least 4 characters, in any case (too short or ambiguous: ValidationFailed).
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
          version: int
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
        # id: a UUID the client made (the todo's id is then t_ and the UUID in lowercase);
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

        # What changed after 'cursor', oldest first: each changed todo as it stands, each
        # deleted one as a tombstone. Without a cursor: every todo (a first pull). Pull with
        # nextCursor until 'more' is false; that nextCursor is then also the 'since' for
        # io.appd.Bus.Subscribe, which continues with no gap and no repeat. A cursor older than
        # the deletions kept (tombstoneDays) is ResyncRequired. limit: 1 to 500 (default 100).
        method Changes(cursor: ?int, limit: ?int) -> (changes: []TodoChange, nextCursor: int, more: bool)

        error ValidationFailed (field: string, reason: string)
        error NotFound ()
        # The account holds as many todos as it may ('limit'); delete some first.
        error QuotaExceeded (limit: int)
        # The todo is not at the version expected, or an Add's id holds another todo: 'todo'
        # is the todo as it stands; the server's version wins, the client decides what to do.
        error Conflict (todo: Todo)
        # The cursor is older than the deletions kept: pull again without a cursor.
        error ResyncRequired (reason: string)

        """

    static let needs: [Requirement] = [.session, .onboarded]
    /// Changes keep their first outcome for a retry with the same idempotency key.
    static let changes: [Requirement] = [.session, .onboarded, .idempotent]

    struct Add: Command {
        static let method = "io.appd.Todos.Add"
        static var requirements: [Requirement] { changes }
        typealias Reply = TodoReply
        var title: String
        var notes: String?
        var dueAt: String?
        var id: String?
    }
    struct Get: Command {
        static let method = "io.appd.Todos.Get"
        static var requirements: [Requirement] { needs }
        typealias Reply = TodoReply
        var id: String
    }
    struct List: Command {
        static let method = "io.appd.Todos.List"
        static var requirements: [Requirement] { needs }
        typealias Reply = TodoPage
        var filter: String?
        var cursor: String?
        var limit: Int?
    }
    struct Update: Command {
        static let method = "io.appd.Todos.Update"
        static var requirements: [Requirement] { changes }
        typealias Reply = TodoReply
        var id: String
        var title: String?
        var notes: String?
        var dueAt: String?
        var expectedVersion: Int64?
    }
    struct Complete: Command {
        static let method = "io.appd.Todos.Complete"
        static var requirements: [Requirement] { changes }
        typealias Reply = TodoReply
        var id: String
        var expectedVersion: Int64?
    }
    struct Reopen: Command {
        static let method = "io.appd.Todos.Reopen"
        static var requirements: [Requirement] { changes }
        typealias Reply = TodoReply
        var id: String
        var expectedVersion: Int64?
    }
    struct Delete: Command {
        static let method = "io.appd.Todos.Delete"
        static var requirements: [Requirement] { changes }
        typealias Reply = Empty
        var id: String
        var expectedVersion: Int64?
    }
    struct ClearCompleted: Command {
        static let method = "io.appd.Todos.ClearCompleted"
        static var requirements: [Requirement] { changes }
        typealias Reply = Cleared
    }

    struct Changes: Command {
        static let method = "io.appd.Todos.Changes"
        static var requirements: [Requirement] { needs }
        typealias Reply = ChangePage
        var cursor: Int64?
        var limit: Int?
    }

    struct TodoReply: Codable, Sendable { var todo: Todo }
    struct ChangePage: Codable, Sendable {
        var changes: [TodoChange]
        var nextCursor: Int64
        var more: Bool
    }
    struct TodoPage: Codable, Sendable {
        var todos: [Todo]
        var nextCursor: String?
    }
    struct Cleared: Codable, Sendable { var deleted: Int }
}

public struct Todo: Codable, Sendable, Equatable {
    public var id: String
    public var title: String
    public var notes: String?
    public var done: Bool
    public var dueAt: String?
    public var createdAt: String
    public var updatedAt: String
    public var completedAt: String?
    public var version: Int64
}

/// One change in a pull (`Todos.Changes`): the todo as it stands, or a deleted todo's id.
public struct TodoChange: Codable, Sendable, Equatable {
    public var seq: Int64
    public var id: String
    public var deleted: Bool
    public var todo: Todo?
}
