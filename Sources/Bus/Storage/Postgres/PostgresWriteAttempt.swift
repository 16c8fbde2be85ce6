// SPDX-License-Identifier: Apache-2.0
import BusCore

/// One attempt at a write transaction on PostgreSQL (a group-commit batch): where its events
/// go in the log, and whether it lost a race with another instance's transaction.
///
/// **Positions.** An event's position is `appd_event_position() + i`: the log's base plus the
/// transaction's id shifted left by 20 bits (`pg_current_xact_id()`, the same for every
/// statement of the transaction and never reused), plus the event's index in the transaction.
/// So positions follow transaction ids, not commit order, and a reader takes only what lies
/// below the horizon (`appd_event_horizon()`: the oldest transaction still running, shifted the
/// same way), where nothing can commit any more. docs/postgres.md has the argument.
final class PostgresWriteAttempt {
    /// Events one transaction may log: the index's 20 bits.
    static let eventsPerTransaction: Int64 = 1 << 20

    /// Events this attempt has given a position to (rolled-back savepoints leave gaps, which
    /// readers never wait for).
    private(set) var eventsLogged: Int64 = 0
    /// A statement failed with a serialization failure or a deadlock: the whole transaction
    /// must be rolled back and run again.
    private(set) var conflicted = false

    /// The largest `Transaction.signal` message (PostgreSQL refuses a NOTIFY payload of 8000 bytes).
    static let signalBytes = 7_000

    /// Messages for every instance, sent with the commit (`Transaction.signal`).
    var signals: [String] = []

    /// The owners this attempt erased (`Transaction.redactEvents`): if it loses a race, the
    /// next attempt takes their erasure locks before it begins (`PostgresSchema.erasureLock`).
    var erasures: Set<String> = []

    /// `appd_event_position()` of this transaction, once asked for (one round trip per
    /// transaction, not per event).
    private var first: Int64?

    /// The transaction was rolled back and begun again: a new transaction id, new positions.
    func restarted() {
        first = nil
        eventsLogged = 0
        signals = []
    }

    /// The position of the event at `index` (from `take`), asking the server for the
    /// transaction's first position the first time.
    func position(of index: Int64, on connection: PostgresConnection) throws(StorageError) -> Int64 {
        if let first { return first + index }
        let row = try noting { () throws(StorageError) in try connection.run("SELECT appd_event_position() AS p", []).rows.first }
        guard let start = row?.integer("p") else {
            throw StorageError(kind: .other, message: "appd_event_position() returned nothing")
        }
        first = start
        return start + index
    }

    /// The indexes of the next `count` events in this transaction.
    func take(_ count: Int) throws(StorageError) -> Int64 {
        let first = eventsLogged
        guard first + Int64(count) <= Self.eventsPerTransaction else {
            throw StorageError(
                kind: .full,
                message: "one write transaction may log at most \(Self.eventsPerTransaction) events; split the write into smaller ones")
        }
        eventsLogged += Int64(count)
        return first
    }

    /// Runs one statement, noting whether it lost a race.
    func noting<T>(_ statement: () throws(StorageError) -> T) throws(StorageError) -> T {
        do {
            return try statement()
        } catch {
            if error.isSerializationFailure { conflicted = true }
            throw error
        }
    }
}
