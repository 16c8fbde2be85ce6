// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSQLite

/// One SQLite connection. Not thread-safe: only the database's own thread uses it.
final class SQLiteConnection {
    private let handle: OpaquePointer
    /// Statements prepared once per SQL text, each with its result's column names once known:
    /// one lookup per statement run.
    private var statements: [StatementKey: Prepared] = [:]
    /// Whether an owner may have been erased (`appd_erased_owners` holds a row): false only
    /// while the table was empty when the write connection opened and no write on it has
    /// erased anyone since (one appd owns the file, and its writes go through this
    /// connection), so an event is logged without looking its owner up there. Set before an
    /// erasure is written and never cleared (a rolled-back erasure only costs the look-ups).
    var mayHoldErasedOwners = true

    /// Process-wide settings made once, before SQLite initialises (the first open): no memory
    /// statistics (nothing reads them, and they lock a global mutex on every allocation: 3.7 %
    /// of the writer thread's samples under durable writes, 0.4 % without).
    private static let configured: Void = { _ = appd_sqlite_disable_memstatus() }()

    init(path: String, busyTimeoutMilliseconds: Int32, readOnly: Bool = false) throws(StorageError) {
        Self.configured
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw Self.error(rc, message + " (\(path))")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    deinit {
        for prepared in statements.values { sqlite3_finalize(prepared.statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs SQL text that may hold several statements and no parameters (pragmas, migrations).
    func executeScript(_ sql: String) throws(StorageError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw Self.error(rc, text)
        }
    }

    /// Runs one parameterless statement that returns no rows (BEGIN, SAVEPOINT, RELEASE,
    /// COMMIT) from the statement cache: these run several times per write, and parsing them
    /// each time showed up in profiles.
    func control(_ sql: String) throws(StorageError) {
        let statement = try prepare(sql).statement
        defer { sqlite3_reset(statement) }
        var rc = sqlite3_step(statement)
        while rc == SQLITE_ROW { rc = sqlite3_step(statement) }
        guard rc == SQLITE_DONE else { throw lastError(rc) }
    }

    /// Runs one statement with parameters; returns its rows (none for writes).
    func run(_ sql: String, _ parameters: [SQLValue]) throws(StorageError) -> [Row] {
        try run(sql, parameters, until: nil).rows
    }

    /// As `run`, stepping only until `stop` says a row is one too many (that row is left out):
    /// then `stopped` is true, and SQLite reads no further.
    func run(_ sql: String, _ parameters: [SQLValue], until stop: ((Row) -> Bool)?) throws(StorageError) -> (rows: [Row], stopped: Bool) {
        let prepared = try prepare(sql)
        let statement = prepared.statement
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in parameters.enumerated() {
            let position = Int32(index + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(statement, position)
            case .integer(let i): rc = sqlite3_bind_int64(statement, position, i)
            case .real(let d): rc = sqlite3_bind_double(statement, position, d)
            case .text(let s):
                // Bound by byte length: a NUL inside the text is stored, never a place to cut it
                // (`alice@example.com\0junk` must not be read as alice's address).
                var text = s
                rc = text.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(statement, position, $0.baseAddress, Int32(bytes.count), appd_sqlite_transient()) }
                }
            case .blob(let b):
                rc = b.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), appd_sqlite_transient()) }
            }
            guard rc == SQLITE_OK else { throw lastError(rc) }
        }
        var rows: [Row] = []
        var columns: [String]?
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return (rows, false) }
            guard rc == SQLITE_ROW else { throw lastError(rc) }
            let count = sqlite3_column_count(statement)
            if columns == nil {
                if let known = prepared.columns {
                    columns = known
                } else {
                    let names = (0..<count).map { String(cString: sqlite3_column_name(statement, $0)) }
                    prepared.columns = names
                    columns = names
                }
            }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(count))
            for column in 0..<count {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT:
                    let bytes = Int(sqlite3_column_bytes(statement, column))
                    let text = sqlite3_column_text(statement, column).map { String(decoding: UnsafeBufferPointer(start: $0, count: bytes), as: UTF8.self) }
                    values.append(.text(text ?? ""))
                case SQLITE_BLOB:
                    let bytes = Int(sqlite3_column_bytes(statement, column))
                    let pointer = sqlite3_column_blob(statement, column)
                    values.append(.blob(pointer.map { Array(UnsafeRawBufferPointer(start: $0, count: bytes)) } ?? []))
                default: values.append(.null)
                }
            }
            let row = Row(columns: columns ?? [], values: values)
            if let stop, stop(row) { return (rows, true) }
            rows.append(row)
        }
    }

    var changes: Int { Int(sqlite3_changes(handle)) }
    /// Whether a transaction is open: SQLite rolls one back by itself after some errors (a full
    /// disk, an I/O error), and statements after that would each commit on their own.
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    private func prepare(_ sql: String) throws(StorageError) -> Prepared {
        let key = StatementKey(sql: sql)
        if let cached = statements[key] { return cached }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw lastError(rc) }
        if statements.count > 512 {
            for old in statements.values { sqlite3_finalize(old.statement) }
            statements.removeAll()
        }
        let prepared = Prepared(statement)
        statements[key] = prepared
        return prepared
    }

    /// A prepared statement and, once it has returned a row, its columns' names.
    private final class Prepared {
        let statement: OpaquePointer
        var columns: [String]?
        init(_ statement: OpaquePointer) { self.statement = statement }
    }

    /// The statement cache's key: the SQL text, hashed by its length and its first and last 32
    /// bytes rather than all of it — hashing whole statements (200–300 bytes each, several per
    /// write) was ~4% of the writer thread's samples under durable writes. Keys are equal when
    /// their texts are, so texts that hash alike only cost a comparison.
    private struct StatementKey: Hashable {
        let sql: String

        static func == (a: StatementKey, b: StatementKey) -> Bool { a.sql == b.sql }

        func hash(into hasher: inout Hasher) {
            let utf8 = sql.utf8
            hasher.combine(utf8.count)
            let hashed: Void? = utf8.withContiguousStorageIfAvailable { bytes in
                hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.prefix(32))))
                hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(32))))
            }
            if hashed == nil {
                for byte in utf8.prefix(32) { hasher.combine(byte) }
                for byte in utf8.suffix(32) { hasher.combine(byte) }
            }
        }
    }

    private func lastError(_ rc: Int32) -> StorageError {
        Self.error(rc, String(cString: sqlite3_errmsg(handle)))
    }

    static func error(_ rc: Int32, _ message: String) -> StorageError {
        let kind: StorageError.Kind
        switch rc & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: kind = .busy
        case SQLITE_CONSTRAINT: kind = .constraint
        case SQLITE_FULL: kind = .full
        case SQLITE_CORRUPT, SQLITE_NOTADB: kind = .corrupt
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_CANTOPEN: kind = .readOnly
        case SQLITE_IOERR: kind = .io
        default: kind = .other
        }
        return StorageError(kind: kind, message: message)
    }
}
