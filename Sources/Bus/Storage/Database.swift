// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The SQL an engine speaks. Repositories keep one text where the dialects agree (`?`
/// placeholders, `ON CONFLICT … DO UPDATE/NOTHING`, `RETURNING`, `IS DISTINCT FROM`) and
/// branch on this where they do not (mostly DDL in migrations).
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres

    /// An SQL expression for the event log's horizon: every position below it is final — no
    /// transaction that is still running or has yet to start can log an event there. A reader
    /// of the log (`seq > cursor`) that also reads `seq < horizon` never moves its cursor past
    /// an event that commits later. On SQLite one writer commits in position order, so
    /// everything committed is final; on PostgreSQL writers on several instances commit in any
    /// order (see docs/postgres.md, "The event log's order").
    public var eventHorizon: String {
        switch self {
        case .sqlite: "9223372036854775807"
        case .postgres: "appd_event_horizon()"
        }
    }
}

/// A value bound to or read from SQL.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(floatLiteral value: Double) { self = .real(value) }
}

/// One result row, read by column name.
public struct Row: Sendable {
    public let columns: [String]
    public let values: [SQLValue]

    /// The value of the column named `column` (`.null` when there is none). Names are SQL
    /// identifiers, matched by their UTF-8 bytes: the lengths are compared first, since `==` on
    /// two different strings runs Unicode-aware comparison, and a row is read by name a dozen
    /// times (a listed todo: ten names among ten columns).
    public subscript(_ column: String) -> SQLValue {
        let length = column.utf8.count
        for index in columns.indices where columns[index].utf8.count == length && columns[index] == column { return values[index] }
        return .null
    }

    public func integer(_ column: String) -> Int64? {
        if case .integer(let i) = self[column] { return i }
        return nil
    }

    public func text(_ column: String) -> String? {
        if case .text(let s) = self[column] { return s }
        return nil
    }

    public func real(_ column: String) -> Double? {
        switch self[column] {
        case .real(let d): d
        case .integer(let i): Double(i)
        default: nil
        }
    }
}

/// The statements a repository runs inside one transaction. Valid only inside the closure
/// it was given to; the closure runs on the database's own thread.
public protocol Transaction {
    /// Runs a statement; returns the number of rows it changed.
    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int
    /// Runs a query and returns every row.
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [Row]
    /// Which SQL the engine speaks, for the few statements where the dialects differ.
    var dialect: SQLDialect { get }
    /// Appends a durable event to the event log in this transaction (the outbox) and returns
    /// its sequence number. It reaches live subscribers only after the commit, and never if
    /// the transaction rolls back.
    @discardableResult
    func append(_ event: BusEvent) throws -> Int64
    /// Appends a durable event whose sequence number is assigned when the transaction commits
    /// (an engine may then log every event of a batch in one statement). Erasure keeps its
    /// meaning: an event about an erased owner is logged redacted (see `redactEvents`).
    func appendAtCommit(_ event: BusEvent) throws
    /// Erasure: replaces the payload of every logged event about `userID` with a tombstone
    /// (topic, sequence and time stay), and remembers `userID` as erased: any event about them
    /// logged after this — by another write of the batch, a consumer still catching up, a write
    /// committing on another instance at the same moment — is logged as a tombstone too. Only
    /// the events this same write appends after the erasure (the deletion's own notice) keep
    /// their payload. Returns how many logged events were redacted.
    @discardableResult
    func redactEvents(about userID: String) throws -> Int
    /// The keyed call this write belongs to (see `IdempotencyRecord`), if any; nil in reads.
    var idempotency: IdempotencyRecord? { get }
    /// A page of `inner`'s rows bounded by `page`'s bytes (`BytePage.rows`); the default runs the
    /// running-sum SQL, an engine that can stop mid-result does better.
    func page(_ page: BytePage, _ inner: String, orderBy: String, _ parameters: [SQLValue]) throws -> (shown: [Row], cut: Bool)
    /// Sends `message` to every instance sharing the database (`Database.signals`) when, and only
    /// if, this transaction commits. Nothing where no other instance shares the database.
    func signal(_ message: String) throws
    /// Runs `statements` in order and returns each one's rows. Where the database is across a
    /// network (PostgreSQL) they go in one round trip, so use it for statements that do not need
    /// each other's answers. The first that fails throws (those after it did not run).
    func pipeline(_ statements: [SQLStatement]) throws -> [[Row]]
}

extension Transaction {
    public func page(_ page: BytePage, _ inner: String, orderBy: String, _ parameters: [SQLValue]) throws -> (shown: [Row], cut: Bool) {
        page.split(try query(page.sql(inner, orderBy: orderBy, dialect: dialect), page.parameters(parameters)))
    }

    @discardableResult
    public func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    public func query(_ sql: String) throws -> [Row] { try query(sql, []) }

    /// Appends a typed durable event, caused by `cause` (the command's envelope, or the event a
    /// consumer is handling): its id and correlation id go into the log with it.
    public func append<E: Event>(_ event: E, causedBy cause: (any Cause)?) throws {
        guard E.durable else {
            throw StorageError(kind: .other, message: "\(E.topic) is live-only: publish it with bus.publish, not in a transaction")
        }
        try appendAtCommit(BusEvent(event, causedBy: cause))
    }

    /// Appends a typed durable event now and returns its sequence number (for a change feed,
    /// which records where each change sits on the log's sequence).
    public func appendLogged<E: Event>(_ event: E, causedBy cause: (any Cause)?) throws -> Int64 {
        guard E.durable else {
            throw StorageError(kind: .other, message: "\(E.topic) is live-only: publish it with bus.publish, not in a transaction")
        }
        return try append(BusEvent(event, causedBy: cause))
    }

    /// Logged now, like `append`.
    public func appendAtCommit(_ event: BusEvent) throws {
        _ = try append(event)
    }

    @discardableResult
    public func redactEvents(about userID: String) throws -> Int {
        try execute(EventLog.erase, [.text(userID)])
        return try execute(EventLog.redact, [.text(userID)])
    }

    public var idempotency: IdempotencyRecord? { nil }

    public func signal(_ message: String) throws {}

    /// One statement after another (an embedded engine has no round trips to save).
    public func pipeline(_ statements: [SQLStatement]) throws -> [[Row]] {
        try statements.map { try query($0.sql, $0.parameters) }
    }
}

/// A statement and its parameters, for `Transaction.pipeline`.
public struct SQLStatement: Sendable {
    public var sql: String
    public var parameters: [SQLValue]

    public init(_ sql: String, _ parameters: [SQLValue] = []) {
        self.sql = sql
        self.parameters = parameters
    }
}

/// The small SQL database protocol plugins reach only through their repositories: SQLite
/// (embedded, one instance) or PostgreSQL (several instances on one database) serve it, and
/// plugins do not change between them.
public protocol Database: Sendable {
    /// Which SQL the engine speaks (migrations and the few statements that differ).
    var dialect: SQLDialect { get }
    /// Whether other appd instances write to the same database: caches of what is in it must
    /// then be bypassed or invalidated across instances.
    var sharedAcrossInstances: Bool { get }
    /// What other instances' commits signal (`Transaction.signal`); nil when no other instance
    /// shares the database.
    var signals: DeploymentSignals? { get }
    /// Runs `body` while this instance holds the lease `name`, which at most one instance holds
    /// at a time; waits for it first. If the lease is lost (the link to the database broke),
    /// `body` is cancelled and the lease sought again. Returns when `body` returns.
    func holdingLease(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws
    /// Runs `body` in a write transaction. Returns only after the commit is durable; throws
    /// (and changes nothing) when `body` throws or the commit fails.
    @discardableResult
    func write<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T
    /// Runs `body` against a consistent snapshot.
    func read<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T
    /// Finishes queued work and closes the database.
    func close() async
    /// Writes a consistent copy of the whole database into the new file `path` while it keeps
    /// serving (writes go on; the copy is the state of one moment).
    func backup(into path: String) async throws
    /// Makes what was deleted unreadable in the database's files, not only gone from its rows
    /// (an erased account's text in freed pages and the write-ahead log). What an engine can
    /// promise is in the README's security model.
    func reclaimErased() async throws
}

extension Database {
    public var signals: DeploymentSignals? { nil }

    /// Nothing to do where the engine cannot be asked from here (PostgreSQL: see the README).
    public func reclaimErased() async throws {}

    public func backup(into path: String) async throws {
        throw StorageError(kind: .other, message: "this database cannot be backed up by appd")
    }
}
