// SPDX-License-Identifier: Apache-2.0
@testable import BusCore
import Contracts
import Testing

/// The reply types that write their own JSON (`JSONObjectWritable`) write exactly the bytes of
/// their `Encodable` conformance, alone and as members of Codable values.
/// (`JSONBytesEncoderTests` holds every reply type, these included, to the same bytes over
/// samples made from the IDL.)
@Suite struct JSONObjectWritableTests {
    static func reference(_ value: some Encodable) throws -> [UInt8] { JSONWriter.bytes(try JSONValue(encoding: value)) }

    static let awkward = "quote \" back \\ new\nline tab\t ctl \u{1} é ✓ </script>"
    static let full = Todo(
        id: "t_1", title: awkward, notes: "notes\r\n", done: true, dueAt: "2026-12-05T09:00:00Z", createdAt: "2026-12-04T06:00:00Z",
        updatedAt: "2026-12-04T06:30:00.125Z", completedAt: "2026-12-04T06:30:00.125Z", version: Int64.max, attachments: ["f_1", "f_\"2\u{1}"])
    static let bare = Todo(id: "", title: "", done: false, createdAt: "c", updatedAt: "u", version: -1)

    /// The names of a value's stored members that are nil: a sample with none covers every member.
    static func absentMembers(of value: Any) -> [String] {
        Mirror(reflecting: value).children.compactMap { child in
            let inner = Mirror(reflecting: child.value)
            return inner.displayStyle == .optional && inner.children.isEmpty ? child.label ?? "?" : nil
        }
    }

    /// Compared as text (the bytes are UTF-8 made from Strings), so a failure reads as JSON.
    static func expectSameBytes<V: JSONObjectWritable & Sendable>(_ value: V, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = String(decoding: try reference(value), as: UTF8.self)
        #expect(String(decoding: JSONObjectWriter.bytes(of: value), as: UTF8.self) == expected, sourceLocation: sourceLocation)
        #expect(String(decoding: try JSONBytesEncoder.encode(value), as: UTF8.self) == expected, sourceLocation: sourceLocation)
        #expect(String(decoding: try JSONBytesEncoder.encoder(for: V.self)(value), as: UTF8.self) == expected, sourceLocation: sourceLocation)
    }

    @Test func theSamplesSetEveryMember() {
        #expect(Self.absentMembers(of: Self.full) == [])
        #expect(Self.absentMembers(of: TodoChange(seq: 1, id: "t_1", deleted: false, todo: Self.full)) == [])
        #expect(Self.absentMembers(of: TodosInterface.TodoPage(todos: [Self.full], nextCursor: "n")) == [])
        #expect(Self.absentMembers(of: Self.bare).sorted() == ["attachments", "completedAt", "dueAt", "notes"], "the check sees an absent member")
    }

    @Test func todosWriteTheBytesOfTheirCodableConformance() throws {
        for todo in [Self.full, Self.bare] {
            try Self.expectSameBytes(todo)
            try Self.expectSameBytes(TodosInterface.TodoReply(todo: todo))
            try Self.expectSameBytes(TodoChange(seq: 42, id: todo.id, deleted: false, todo: todo))
        }
        try Self.expectSameBytes(TodoChange(seq: 0, id: "t_9", deleted: true))
        try Self.expectSameBytes(TodosInterface.TodoPage(todos: [Self.full, Self.bare, Self.full], nextCursor: "t_1"))
        try Self.expectSameBytes(TodosInterface.TodoPage(todos: []))
        try Self.expectSameBytes(
            TodosInterface.ChangePage(
                changes: [TodoChange(seq: 1, id: "t_1", deleted: false, todo: Self.full), TodoChange(seq: 2, id: "t_2", deleted: true)],
                nextCursor: Int64.min, more: true))
        try Self.expectSameBytes(TodosInterface.ChangePage(changes: [], nextCursor: 0, more: false))
    }

    /// What the writer reserves for a page covers the page (one allocation, no doubling) when
    /// its text needs no escapes: every member present, times as the server writes them, the
    /// largest version. Fails when a member is added without room in the estimate.
    @Test func theByteEstimatesCoverTheirValues() {
        let todo = Todo(
            id: "t_01JEXAMPLE7Q3ZP4M5N6R8S9TV", title: "Buy milk and bread", notes: "Two litres, whole grain", done: true,
            dueAt: "2026-12-05T09:00:00.000Z", createdAt: "2026-12-04T06:00:00.000Z", updatedAt: "2026-12-04T06:30:00.125Z",
            completedAt: "2026-12-04T06:30:00.125Z", version: Int64.max, attachments: ["f_01JEXAMPLE7Q3ZP4M5N6R8S9TV", "f_01JEXAMPLE7Q3ZP4M5N6R8S9TW"])
        let change = TodoChange(seq: Int64.max, id: todo.id, deleted: false, todo: todo)
        // (estimate, bytes) for each value, compared as numbers so a failure reads short.
        func sizes(_ value: some JSONObjectWritable) -> (estimate: Int, bytes: Int) { (value.jsonBytesEstimate, JSONObjectWriter.bytes(of: value).count) }
        let page = TodosInterface.TodoPage(todos: Array(repeating: todo, count: 50), nextCursor: "9223372036854775807")
        let all = [
            sizes(todo), sizes(TodosInterface.TodoReply(todo: todo)), sizes(change), sizes(page),
            sizes(TodosInterface.ChangePage(changes: Array(repeating: change, count: 50), nextCursor: Int64.max, more: true)),
        ]
        for (index, (estimate, bytes)) in all.enumerated() { #expect(estimate >= bytes, "value \(index): \(estimate) reserved for \(bytes) bytes") }
        // Not far over, either: a page of 50 reserves less than one and a half times what it takes.
        #expect(Double(sizes(page).estimate) < 1.5 * Double(sizes(page).bytes))
    }

    @Test func theAddEventWritesTheBytesOfItsCodableConformance() throws {
        let created = TodoCreated(todoId: "t_1", userId: "u_1", title: Self.awkward, dueAt: "2026-12-05T09:00:00Z")
        for event in [created, TodoCreated(todoId: "t_2", userId: "u_\"2", title: "")] { try Self.expectSameBytes(event) }
        // As logged and published: the event's payload bytes.
        #expect(try BusEvent(created, causedBy: nil).jsonBytes() == (try Self.reference(created)))
        #expect(Self.absentMembers(of: created) == [])
    }

    static let user = User(
        id: "u_1", email: awkward, displayName: "Ann \"A\" Lee ✓", onboarded: true, emailVerified: true, guest: false, avatarFileId: "f_1",
        createdAt: "2026-12-04T06:00:00Z")
    static let bareUser = User(id: "", email: "", onboarded: false, emailVerified: false, guest: true, createdAt: "")

    @Test func authRepliesWriteTheBytesOfTheirCodableConformance() throws {
        #expect(Self.absentMembers(of: Self.user) == [])
        #expect(Self.absentMembers(of: Self.bareUser) == ["displayName", "avatarFileId"], "the check sees an absent member")
        for user in [Self.user, Self.bareUser] {
            let session = Session(accessToken: "a.\\b", refreshToken: "r", expiresAt: "2026-12-05T09:00:00Z", user: user)
            try Self.expectSameBytes(user)
            try Self.expectSameBytes(session)
            try Self.expectSameBytes(AuthInterface.UserReply(user: user))
            try Self.expectSameBytes(AuthInterface.SessionReply(session: session))
            try Self.expectSameBytes(AuthInterface.SignUpReply(user: user, session: session))
            try Self.expectSameBytes(AuthInterface.SignUpReply(user: user))
        }
    }

    struct Holder: Encodable {
        var page: TodosInterface.TodoPage
        var optionalPage: TodosInterface.TodoPage?
        var list: [Todo]
        var nested: [[Todo?]]
        var name = "holder"
    }

    @Test func asMembersOfCodableValuesTheyWriteTheSameBytes() throws {
        let page = TodosInterface.TodoPage(todos: [Self.full, Self.bare], nextCursor: "x")
        for holder in [
            Holder(page: page, optionalPage: page, list: [Self.bare, Self.full], nested: [[Self.full, nil], []]),
            Holder(page: TodosInterface.TodoPage(todos: []), optionalPage: nil, list: [], nested: []),
        ] {
            let text = String(decoding: try JSONBytesEncoder.encode(holder), as: UTF8.self)
            #expect(text == String(decoding: try Self.reference(holder), as: UTF8.self))
        }
        #expect(try JSONBytesEncoder.encode([Self.full, Self.bare]) == (try Self.reference([Self.full, Self.bare])))
    }
}
