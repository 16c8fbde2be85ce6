import BusCore

/// The events the todos plugin publishes; each is about the todo's owner.
public enum TodosEvents {
    public static let all: [any Event.Type] = [TodoCreated.self, TodoUpdated.self, TodoCompleted.self, TodoReopened.self, TodoDeleted.self]
}

/// A todo was added.
public struct TodoCreated: OwnedEvent, Equatable {
    public static let topic = "todos.created"
    public var todoId: String
    public var userId: String
    public var title: String
    public init(todoId: String, userId: String, title: String) {
        self.todoId = todoId
        self.userId = userId
        self.title = title
    }
}

/// A todo's title, notes or due date changed.
public struct TodoUpdated: OwnedEvent, Equatable {
    public static let topic = "todos.updated"
    public var todoId: String
    public var userId: String
    public init(todoId: String, userId: String) {
        self.todoId = todoId
        self.userId = userId
    }
}

/// An open todo was completed.
public struct TodoCompleted: OwnedEvent, Equatable {
    public static let topic = "todos.completed"
    public var todoId: String
    public var userId: String
    public init(todoId: String, userId: String) {
        self.todoId = todoId
        self.userId = userId
    }
}

/// A completed todo was opened again.
public struct TodoReopened: OwnedEvent, Equatable {
    public static let topic = "todos.reopened"
    public var todoId: String
    public var userId: String
    public init(todoId: String, userId: String) {
        self.todoId = todoId
        self.userId = userId
    }
}

/// A todo was deleted (one by one, or by ClearCompleted).
public struct TodoDeleted: OwnedEvent, Equatable {
    public static let topic = "todos.deleted"
    public var todoId: String
    public var userId: String
    public init(todoId: String, userId: String) {
        self.todoId = todoId
        self.userId = userId
    }
}
