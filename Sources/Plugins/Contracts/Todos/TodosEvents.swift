// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The events the todos plugin publishes; each is about the todo's owner.
public enum TodosEvents {
    public static let all: [any Event.Type] = [TodoCreated.self, TodoUpdated.self, TodoCompleted.self, TodoReopened.self, TodoDeleted.self]
}

/// A todo was added.
///
/// Version 2 adds `dueAt` (RFC 3339, when it has one); version 1 rows read with none.
public struct TodoCreated: OwnedEvent, Equatable {
    public static let topic = "todos.created"
    public static let version = 2
    public var todoId: String
    public var userId: String
    public var title: String
    public var dueAt: String?
    public init(todoId: String, userId: String, title: String, dueAt: String? = nil) {
        self.todoId = todoId
        self.userId = userId
        self.title = title
        self.dueAt = dueAt
    }

    public static func upgrade(_ payload: JSONValue, from version: Int) throws -> JSONValue { payload }
}

/// A todo's title, notes or due date changed.
///
/// Version 2 adds the title and due time as they now stand (a reminder follows the due time);
/// version 1 rows read with neither.
public struct TodoUpdated: OwnedEvent, Equatable {
    public static let topic = "todos.updated"
    public static let version = 2
    public var todoId: String
    public var userId: String
    public var title: String?
    public var dueAt: String?
    public init(todoId: String, userId: String, title: String? = nil, dueAt: String? = nil) {
        self.todoId = todoId
        self.userId = userId
        self.title = title
        self.dueAt = dueAt
    }

    public static func upgrade(_ payload: JSONValue, from version: Int) throws -> JSONValue { payload }
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
