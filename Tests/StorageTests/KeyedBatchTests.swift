// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing
import TestSupport
@testable import Storage

/// A keyed write's row keeps the reply its committed run staged. A batch with a failing write is
/// run a second time with savepoints (both engines: `DatabaseWork.run` twice), so every write in
/// it runs twice: a reply staged only by the first, undone run must not be kept.
@Suite struct KeyedBatchTests {
    @Test func aReplyStagedOnlyByARunThatWasUndoneIsNotKept() async throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let connection = try SQLiteConnection(path: dir + "/batch.db", busyTimeoutMilliseconds: 1000)
        try connection.executeScript(EventLog.schema + IdempotencyLog.schema + "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);")
        let record = IdempotencyRecord(scope: "uid:1", method: "io.appd.Test.Add", key: "k1", fingerprint: "f")
        let runs = RunCount()
        // The two callers, waiting for their answers.
        let callers = Callers()
        async let keyedAnswer: Void = withCheckedThrowingContinuation { callers.set(keyed: $0) }
        async let failingAnswer: Void = withCheckedThrowingContinuation { callers.set(failing: $0) }
        #expect(await eventually { callers.both != nil })
        let (k, f) = try #require(callers.both)
        var keyed = DatabaseWork(
            { transaction in
                _ = try transaction.execute("INSERT INTO notes (text) VALUES (?)", [.text("keyed")])
                // Only the first run stages (the run the batch's second pass undoes).
                if runs.next() == 1 { try transaction.stageReply(["stale": true] as JSONValue) }
            }, k)
        keyed.idempotency = record
        let failing = DatabaseWork(
            { transaction in
                _ = try transaction.execute("INSERT INTO notes (text) VALUES (?)", [.text("failing")])
                throw Boom()
            }, f)
        // What the engines do: a pass without savepoints; a write failed, so a second pass with
        // them; then the commit and the answers.
        let transaction = { SQLiteTransaction(connection: connection, logEvents: true) }
        try connection.control("BEGIN IMMEDIATE")
        let first = try DatabaseWork.run([keyed, failing], savepoints: false, transaction: transaction, control: connection.control)
        #expect(first.anyUndone)
        try connection.control("ROLLBACK")
        try connection.control("BEGIN IMMEDIATE")
        let second = try DatabaseWork.run([keyed, failing], savepoints: true, transaction: transaction, control: connection.control)
        try connection.control("COMMIT")
        for complete in second.completions { complete() }

        try await keyedAnswer
        let failed: Bool
        do {
            try await failingAnswer
            failed = false
        } catch {
            failed = error is Boom
        }
        #expect(failed, "the failing write's caller gets its error")
        #expect(runs.count == 2)
        let rows = try connection.run("SELECT outcome FROM appd_idempotency WHERE key = 'k1'", [])
        #expect(rows.count == 1, "the key is kept with the write")
        #expect(rows.first?.text("outcome") == nil, "no reply: the committed run staged none")
        #expect(record.outcome == (committed: true, withReply: false))
        #expect(try connection.run("SELECT text FROM notes", []).compactMap { $0.text("text") } == ["keyed"])
    }
}

/// The continuations of two callers waiting for a batch.
final class Callers: Sendable {
    private let state = Mutex<(keyed: CheckedContinuation<Void, any Error>?, failing: CheckedContinuation<Void, any Error>?)>((nil, nil))
    func set(keyed: CheckedContinuation<Void, any Error>) { state.withLock { $0.keyed = keyed } }
    func set(failing: CheckedContinuation<Void, any Error>) { state.withLock { $0.failing = failing } }
    var both: (CheckedContinuation<Void, any Error>, CheckedContinuation<Void, any Error>)? {
        state.withLock { s in s.keyed.flatMap { k in s.failing.map { (k, $0) } } }
    }
}

/// How many times a write's closure ran.
final class RunCount: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.add(1, ordering: .acquiringAndReleasing).newValue }
    var count: Int { value.load(ordering: .acquiring) }
}
