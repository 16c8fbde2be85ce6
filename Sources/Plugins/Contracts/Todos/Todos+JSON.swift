// SPDX-License-Identifier: Apache-2.0
import BusCore

// The replies a client lists and pulls most (a page of todos, a page of changes) and the event an
// add logs write their own JSON: the bytes of their `Encodable` conformance (keys sorted,
// absent optionals left out), held to them by `JSONObjectWritableTests` (the replies also by
// `JSONBytesEncoderTests`, over samples made from the IDL). A member added to one of these types
// must be added here too, or those tests fail.

extension Todo: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("attachments", attachments)
        object.member("completedAt", completedAt)
        object.member("createdAt", createdAt)
        object.member("done", done)
        object.member("dueAt", dueAt)
        object.member("id", id)
        object.member("notes", notes)
        object.member("title", title)
        object.member("updatedAt", updatedAt)
        object.member("version", version)
    }

    /// The members' names, four times, the largest version and the punctuation come to 245
    /// bytes; the rest is the todo's text.
    public var jsonBytesEstimate: Int {
        256 + id.utf8.count + title.utf8.count + (notes?.utf8.count ?? 0) + (attachments?.reduce(0) { $0 + $1.utf8.count + 3 } ?? 0)
    }
}

extension TodoChange: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("deleted", deleted)
        object.member("id", id)
        object.member("seq", seq)
        object.member("todo", todo)
    }

    public var jsonBytesEstimate: Int { 48 + id.utf8.count + (todo?.jsonBytesEstimate ?? 0) }
}

extension TodosInterface.TodoPage: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("nextCursor", nextCursor)
        object.member("todos", todos)
    }

    public var jsonBytesEstimate: Int { todos.reduce(48) { $0 + 1 + $1.jsonBytesEstimate } }
}

extension TodosInterface.ChangePage: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("changes", changes)
        object.member("more", more)
        object.member("nextCursor", nextCursor)
    }

    public var jsonBytesEstimate: Int { changes.reduce(64) { $0 + 1 + $1.jsonBytesEstimate } }
}

extension TodosInterface.TodoReply: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("todo", todo)
    }

    public var jsonBytesEstimate: Int { 16 + todo.jsonBytesEstimate }
}

// The event of an add (encoded once per write, for the log and the bus): the durable write apps
// make most.

extension TodoCreated: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("dueAt", dueAt)
        object.member("title", title)
        object.member("todoId", todoId)
        object.member("userId", userId)
    }
}

// The parameters of the calls apps make most read themselves from the call's JSON object
// (`JSONObjectReadable`): the members their `Decodable` conformance reads, in declaration order,
// held to it by `JSONObjectReadableTests`. A member added to one of these commands must be read
// here too, or those tests fail.

extension TodosInterface.Add: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(title: try object.required("title"), notes: try object.optional("notes"), dueAt: try object.optional("dueAt"), id: try object.optional("id"))
    }
}

extension TodosInterface.Get: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws { self.init(id: try object.required("id")) }
}

extension TodosInterface.List: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(filter: try object.optional("filter"), cursor: try object.optional("cursor"), limit: try object.optional("limit"))
    }
}

extension TodosInterface.Update: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(
            id: try object.required("id"), title: try object.optional("title"), notes: try object.optional("notes"), dueAt: try object.optional("dueAt"),
            expectedVersion: try object.optional("expectedVersion"))
    }
}

extension TodosInterface.Complete: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(id: try object.required("id"), expectedVersion: try object.optional("expectedVersion"))
    }
}

extension TodosInterface.Reopen: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(id: try object.required("id"), expectedVersion: try object.optional("expectedVersion"))
    }
}

extension TodosInterface.Delete: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(id: try object.required("id"), expectedVersion: try object.optional("expectedVersion"))
    }
}

extension TodosInterface.Changes: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(cursor: try object.optional("cursor"), limit: try object.optional("limit"))
    }
}
