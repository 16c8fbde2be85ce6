// SPDX-License-Identifier: Apache-2.0
import Bus
import Foundation
import Glibc
@testable import Storage

/// A fresh directory for one test's database files.
func temporaryDirectory() -> String {
    var template = Array("/tmp/appd-storage-XXXXXX".utf8CString)
    guard let dir = mkdtemp(&template) else { return "/tmp" }
    return String(cString: dir)
}

/// Removes a test's directory and whatever the test left in it.
func removeDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

struct NoteAdded: Event, Equatable {
    static let topic = "notes.added"
    static let audience = EventAudience.admin
    var id: Int64
    var text: String
}

struct Boom: Error {}

let notesMigrations = [
    Migration(plugin: "notes", version: 1, sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"),
    Migration(plugin: "notes", version: 2, sql: "ALTER TABLE notes ADD COLUMN done INTEGER NOT NULL DEFAULT 0; CREATE INDEX notes_done ON notes(done);"),
]

/// Adds a note and its event in one transaction.
func addNote(_ text: String, to database: any Database) async throws -> Int64 {
    try await database.write { transaction in
        guard let id = try transaction.query("INSERT INTO notes (text) VALUES (?) RETURNING id", [.text(text)]).first?.integer("id") else {
            throw StorageError(kind: .other, message: "no id returned")
        }
        try transaction.append(NoteAdded(id: id, text: text), causedBy: nil)
        return id
    }
}

/// A database with the notes schema in a fresh directory, publishing committed events to `bus`.
func notesDatabase(bus: EventBus?) async throws -> (directory: String, database: SQLiteDatabase) {
    let dir = temporaryDirectory()
    let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: .relaying(to: bus))
    try await Migrator.migrate(database, notesMigrations)
    return (dir, database)
}

/// An event about a user (its owner), for erasure tests.
struct NoteAbout: Event, Equatable {
    static let topic = "notes.about"
    static let audience = EventAudience.owner
    var userId: String
    var text: String
    var owner: String? { userId }
}

/// Erasure in one transaction, the same on both engines: an event appended before
/// `redactEvents(about:)` is redacted in the log, one appended after it is not, another user's
/// is untouched. Returns the logged rows' (topic text, redacted) by text.
func eraseBetweenAppends(_ database: any Database) async throws -> [String: Bool] {
    try await database.write { tx in
        try tx.append(NoteAbout(userId: "u1", text: "before"), causedBy: nil)
        try tx.append(NoteAbout(userId: "u2", text: "other user"), causedBy: nil)
        try tx.redactEvents(about: "u1")
        try tx.append(NoteAbout(userId: "u1", text: "after"), causedBy: nil)
    }
    let rows = try await database.read { tx in try tx.query("SELECT payload, redacted, owner, seq FROM appd_events WHERE topic = 'notes.about' ORDER BY seq") }
    var out: [String: Bool] = [:]
    for row in rows {
        let redacted = row.integer("redacted") == 1
        let text = redacted ? "redacted:\(row.integer("seq") ?? 0)" : (try JSONParser.parse(Array((row.text("payload") ?? "{}").utf8)))["text"]?.stringValue ?? "?"
        out[text] = redacted
    }
    return out
}

/// Erasure racing other writes, the same on both engines: writers on `appending` log events
/// about u1 while one write on `erasing` erases u1, holds its transaction open a moment (on
/// PostgreSQL, where other instances' batches commit meanwhile) and logs its own notice; then a
/// late event about u1 is logged (a consumer catching up). Returns the texts of the u1 events
/// left readable (only the notice may be) and how many u1 events were logged.
func eraseWhileOthersLog(erasing: any Database, appending: [any Database]) async throws -> (readable: [String], total: Int) {
    @Sendable func count() async throws -> Int64 {
        try await erasing.read { tx -> Int64 in try tx.query("SELECT COUNT(*) AS n FROM appd_events WHERE owner = 'u1'").first?.integer("n") ?? 0 }
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (n, database) in appending.enumerated() {
            for writer in 0..<4 {
                group.addTask {
                    for i in 0..<20 {
                        try await database.write { tx in try tx.append(NoteAbout(userId: "u1", text: "w\(n).\(writer).\(i)"), causedBy: nil) }
                    }
                }
            }
        }
        group.addTask {
            // Midway through the others' writes.
            var waited = 0
            while try await count() < 10, waited < 5_000 {
                try await Task.sleep(for: .milliseconds(1))
                waited += 1
            }
            try await erasing.write { tx in
                try tx.redactEvents(about: "u1")
                if tx.dialect == .postgres { try tx.execute("SELECT pg_sleep(0.1)") }
                try tx.append(NoteAbout(userId: "u1", text: "the notice"), causedBy: nil)
            }
        }
        try await group.waitForAll()
    }
    try await erasing.write { tx in try tx.append(NoteAbout(userId: "u1", text: "late"), causedBy: nil) }
    let rows = try await erasing.read { tx in try tx.query("SELECT payload, redacted FROM appd_events WHERE owner = 'u1'") }
    let readable = try rows.filter { $0.integer("redacted") != 1 }.map { row in
        (try JSONParser.parse(Array((row.text("payload") ?? "{}").utf8)))["text"]?.stringValue ?? "?"
    }
    return (readable, rows.count)
}
