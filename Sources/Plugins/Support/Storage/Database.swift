import Bus

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

    public subscript(_ column: String) -> SQLValue {
        columns.firstIndex(of: column).map { values[$0] } ?? .null
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
    /// The rowid of the last INSERT.
    var lastInsertRowID: Int64 { get }
    /// Appends a durable event to the event log in this transaction (the outbox). It reaches
    /// live subscribers only after the commit, and never if the transaction rolls back.
    func append(_ event: BusEvent) throws
}

extension Transaction {
    @discardableResult
    public func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    public func query(_ sql: String) throws -> [Row] { try query(sql, []) }

    /// Appends a typed durable event, caused by `cause` (the command's envelope, or the event a
    /// consumer is handling): its id and correlation id go into the log with it.
    public func append<E: Event>(_ event: E, causedBy cause: (any Cause)?) throws {
        guard E.durable else {
            throw StorageError(kind: .other, message: "\(E.topic) is live-only: publish it with bus.publish, not in a transaction")
        }
        try append(BusEvent(event, causedBy: cause))
    }

    /// Erasure: replaces the payload of every logged event about `userID` with a tombstone
    /// (topic, sequence and time stay). Returns how many events were redacted.
    @discardableResult
    public func redactEvents(about userID: String) throws -> Int {
        try execute("UPDATE appd_events SET payload = '{}', redacted = 1 WHERE owner = ? AND redacted = 0", [.text(userID)])
    }
}

/// The small SQL database protocol plugins reach only through their repositories, so another
/// driver (PostgreSQL over libpq) can serve it later without touching plugins.
public protocol Database: Sendable {
    /// Runs `body` in a write transaction. Returns only after the commit is durable; throws
    /// (and changes nothing) when `body` throws or the commit fails.
    @discardableResult
    func write<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T
    /// Runs `body` against a consistent snapshot.
    func read<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T
    /// Finishes queued work and closes the database.
    func close() async
}
