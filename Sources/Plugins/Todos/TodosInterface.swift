import Bus

/// `io.appd.Todos`: a signed-in, onboarded user's own todos.
enum TodosInterface {
    static let idl = """
        # Todos. Each user sees and changes only their own; another user's todo is NotFound.
        # Every method needs a signed-in, onboarded account. Ids may be shortened to any unique
        # prefix of at least 4 characters, in any case (too short or ambiguous: ValidationFailed).
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
          completedAt: ?string
        )

        # Adds a todo. Title: 1 to 200 characters; notes: up to 10,000; dueAt: RFC 3339.
        method Add(title: string, notes: ?string, dueAt: ?string) -> (todo: Todo)

        method Get(id: string) -> (todo: Todo)

        # Lists todos oldest first. Pass nextCursor back as cursor for the next page; pages stay
        # correct while todos are added and deleted in between.
        method List(filter: ?(all, open, done), cursor: ?string, limit: ?int) -> (todos: []Todo, nextCursor: ?string)

        # Changes the fields given; an empty string clears notes or dueAt.
        method Update(id: string, title: ?string, notes: ?string, dueAt: ?string) -> (todo: Todo)

        method Complete(id: string) -> (todo: Todo)

        method Reopen(id: string) -> (todo: Todo)

        method Delete(id: string) -> ()

        # Deletes every completed todo.
        method ClearCompleted() -> (deleted: int)

        error ValidationFailed (field: string, reason: string)
        error NotFound ()
        # The account holds as many todos as it may ('limit'); delete some first.
        error QuotaExceeded (limit: int)

        """

    static let needs: [Requirement] = [.session, .onboarded]

    struct Add: Command {
        static let method = "io.appd.Todos.Add"
        static var requirements: [Requirement] { needs }
        typealias Reply = TodoReply
        var title: String
        var notes: String?
        var dueAt: String?
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
        static var requirements: [Requirement] { needs }
        typealias Reply = TodoReply
        var id: String
        var title: String?
        var notes: String?
        var dueAt: String?
    }
    struct Complete: Command {
        static let method = "io.appd.Todos.Complete"
        static var requirements: [Requirement] { needs }
        typealias Reply = TodoReply
        var id: String
    }
    struct Reopen: Command {
        static let method = "io.appd.Todos.Reopen"
        static var requirements: [Requirement] { needs }
        typealias Reply = TodoReply
        var id: String
    }
    struct Delete: Command {
        static let method = "io.appd.Todos.Delete"
        static var requirements: [Requirement] { needs }
        typealias Reply = Empty
        var id: String
    }
    struct ClearCompleted: Command {
        static let method = "io.appd.Todos.ClearCompleted"
        static var requirements: [Requirement] { needs }
        typealias Reply = Cleared
    }

    struct TodoReply: Codable, Sendable { var todo: Todo }
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
}
