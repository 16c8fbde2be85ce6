// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation

// Times travel as RFC 3339 text (UTC, milliseconds): the contracts are shared with appd, which
// does not link Foundation, so their fields stay `String`. An app reads and writes them as
// `Date` through the accessors below (`todo.dueDate`, `Todo.newID()`, `todos.add(due:)`), and
// keeps the text for display of exactly what the server sent.

extension Date {
    /// The instant an RFC 3339 timestamp names (`2026-12-01T09:30:00.250Z`,
    /// `…T10:30:00+01:00`), to the nanosecond; nil when it is not one.
    public init?(rfc3339 text: String) {
        guard let time = RFC3339.parse(text) else { return nil }
        let (seconds, nanoseconds) = time.nanosecondsSinceEpoch.quotientAndRemainder(dividingBy: 1_000_000_000)
        self.init(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    /// RFC 3339 in UTC with milliseconds (`2026-12-01T09:30:00.250Z`), as appd writes times.
    public var rfc3339: String {
        WallTime(nanosecondsSinceEpoch: Int64((timeIntervalSince1970 * 1000).rounded()) * 1_000_000).rfc3339
    }
}

extension Todo {
    public var dueDate: Date? { dueAt.flatMap(Date.init(rfc3339:)) }
    public var createdDate: Date? { Date(rfc3339: createdAt) }
    public var updatedDate: Date? { Date(rfc3339: updatedAt) }
    public var completedDate: Date? { completedAt.flatMap(Date.init(rfc3339:)) }

    /// An id for a todo the app makes itself (offline): `t_` and a random UUID in lowercase —
    /// the exact id appd stores and returns, so the app finds its own row in `Changes`. appd
    /// also accepts a bare UUID and stores it with the prefix.
    public static func newID() -> String { "t_" + UUID().uuidString.lowercased() }
}

extension Conversation {
    public var createdDate: Date? { Date(rfc3339: createdAt) }
    public var updatedDate: Date? { Date(rfc3339: updatedAt) }

    /// An id for a conversation the app makes itself: `c_` and a random UUID in lowercase.
    public static func newID() -> String { "c_" + UUID().uuidString.lowercased() }
}

extension ChatMessage {
    public var createdDate: Date? { Date(rfc3339: createdAt) }
}

extension Memory {
    public var createdDate: Date? { Date(rfc3339: createdAt) }
    public var updatedDate: Date? { Date(rfc3339: updatedAt) }
}

extension User {
    public var createdDate: Date? { Date(rfc3339: createdAt) }
}

extension Identity {
    public var linkedDate: Date? { Date(rfc3339: linkedAt) }
}

extension Session {
    public var expiryDate: Date? { Date(rfc3339: expiresAt) }
}

extension Entitlement {
    public var expiryDate: Date? { expiresAt.flatMap(Date.init(rfc3339:)) }
}

extension Meter {
    public var resetDate: Date? { Date(rfc3339: resetsAt) }
}
