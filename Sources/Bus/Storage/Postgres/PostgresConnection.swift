// SPDX-License-Identifier: Apache-2.0
import BusCore
import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection. Not thread-safe: one thread uses it at a time (the pool job that owns
/// it). Statements take SQLite's `?` placeholders (numbered `$1, $2, …` when the statement is
/// prepared, once per text and connection);
/// parameters go as text and PostgreSQL infers their types from where they stand, so one SQL
/// text serves both engines where the dialects agree.
final class PostgresConnection {
    private(set) var handle: OpaquePointer?
    private let conninfo: String
    /// SQL text → the name of its prepared statement on this connection: statements repeat,
    /// so each is parsed and planned once (that was most of a write's cost on the server).
    var prepared: [String: String] = [:]
    /// Names statements uniquely on this connection (a name dropped from `prepared` may still
    /// exist on the server until the next DEALLOCATE ALL).
    private var preparedSerial = 0
    /// Statements prepared on one connection at most (then all are deallocated and prepared again).
    static let preparedLimit = 512

    /// Connects; `setup` runs once per (re)connection (session settings).
    init(conninfo: String, setup: String) throws(StorageError) {
        self.conninfo = conninfo
        self.setup = setup
        try connect()
    }

    private let setup: String

    deinit { if let handle { appd_PQfinish(handle) } }

    /// Whether the server connection is up (a failed statement may have dropped it).
    var isOpen: Bool { handle.map { appd_PQstatus($0) == CONNECTION_OK } ?? false }

    /// Connects again if the connection dropped; throws when the server cannot be reached.
    func reconnectIfNeeded() throws(StorageError) {
        if !isOpen { try connect() }
    }

    private func connect() throws(StorageError) {
        if let handle { appd_PQfinish(handle) }
        handle = nil
        try Self.loadLibrary()
        guard let connection = appd_PQconnectdb(conninfo) else {
            throw StorageError(kind: .io, message: "libpq could not allocate a connection")
        }
        guard appd_PQstatus(connection) == CONNECTION_OK else {
            // libpq's message names host and port, never the password.
            let message = String(cString: appd_PQerrorMessage(connection)).trimmingWhitespace()
            appd_PQfinish(connection)
            throw StorageError(kind: .io, message: "cannot connect to PostgreSQL: \(message)")
        }
        appd_pq_quiet(connection)
        handle = connection
        try executeScript(setup)
    }

    /// Loads libpq (once): appd does not link it, so a daemon on SQLite never maps it.
    static func loadLibrary() throws(StorageError) {
        var reason = [CChar](repeating: 0, count: 512)
        guard appd_pq_load(&reason, reason.count) != 0 else { return }
        throw StorageError(kind: .io, message: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The server's process id for this connection (tests kill it to simulate a lost link).
    var backendPID: Int32 { handle.map { appd_PQbackendPID($0) } ?? 0 }

    /// Runs SQL text that may hold several statements and no parameters (DDL, session settings).
    func executeScript(_ sql: String) throws(StorageError) {
        guard let handle else { throw StorageError(kind: .io, message: "the PostgreSQL connection is closed") }
        let result = appd_PQexec(handle, sql)
        defer { appd_PQclear(result) }
        let status = appd_PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(result) }
    }

    /// Runs a parameterless statement that returns no rows (BEGIN, SAVEPOINT, COMMIT).
    func control(_ sql: String) throws(StorageError) {
        _ = try run(sql, [])
    }

    /// Runs one statement with parameters; returns its rows and how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ parameters: [SQLValue]) throws(StorageError) -> (rows: [Row], changed: Int) {
        if let done = try execute(sql, parameters) { return done }
        // "cached plan must not change result type": a table it reads changed shape (a
        // migration) after it was prepared. Prepare it again, once.
        try forget(sql)
        guard let done = try execute(sql, parameters) else {
            throw StorageError(kind: .other, message: "a table changed shape while a statement was prepared again (SQLSTATE 0A000)")
        }
        return done
    }

    /// Runs a statement without preparing it: for texts that vary with their data (a multi-row
    /// INSERT), which would only fill the prepared-statement cache.
    func runUnprepared(_ sql: String, _ parameters: [SQLValue]) throws(StorageError) -> [Row] {
        guard let handle else { throw StorageError(kind: .io, message: "the PostgreSQL connection is closed") }
        let text = Self.numberPlaceholders(sql)
        let result = try Self.withParameters(parameters) { types, values, lengths, formats in
            appd_PQexecParams(handle, text, Int32(parameters.count), types, values, lengths, formats, 0)
        }
        defer { appd_PQclear(result) }
        return try outcome(result).rows
    }

    /// Runs the prepared statement for `sql`; nil when its plan is stale (SQLSTATE 0A000).
    private func execute(_ sql: String, _ parameters: [SQLValue]) throws(StorageError) -> (rows: [Row], changed: Int)? {
        guard let handle else { throw StorageError(kind: .io, message: "the PostgreSQL connection is closed") }
        let name = try prepare(sql, parameters: Int32(parameters.count), on: handle)
        let result: OpaquePointer? =
            parameters.isEmpty
            ? appd_PQexecPrepared(handle, name, 0, nil, nil, nil, 0)
            : try Self.withParameters(parameters) { _, values, lengths, formats in
                appd_PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 0)
            }
        defer { appd_PQclear(result) }
        if appd_PQresultStatus(result) == PGRES_FATAL_ERROR, appd_pq_sqlstate(result).map({ String(cString: $0) }) == "0A000" { return nil }
        return try outcome(result)
    }

    /// A result's rows and changed-row count, or its error.
    func outcome(_ result: OpaquePointer?) throws(StorageError) -> (rows: [Row], changed: Int) {
        switch appd_PQresultStatus(result) {
        case PGRES_TUPLES_OK: return (Self.rows(result), Int(String(cString: appd_PQcmdTuples(result))) ?? 0)
        case PGRES_COMMAND_OK: return ([], Int(String(cString: appd_PQcmdTuples(result))) ?? 0)
        default: throw error(result)
        }
    }

    /// The prepared statement for `sql` (with `?` numbered as `$1`, `$2`, …), prepared on first use.
    func prepare(_ sql: String, parameters: Int32, on handle: OpaquePointer) throws(StorageError) -> String {
        if let name = prepared[sql] { return name }
        if prepared.count >= Self.preparedLimit {
            try executeScript("DEALLOCATE ALL")
            prepared.removeAll()
        }
        preparedSerial += 1
        let name = "appd_\(preparedSerial)"
        let result = appd_PQprepare(handle, name, Self.numberPlaceholders(sql), 0, nil)
        defer { appd_PQclear(result) }
        guard appd_PQresultStatus(result) == PGRES_COMMAND_OK else { throw error(result) }
        prepared[sql] = name
        return name
    }

    private func forget(_ sql: String) throws(StorageError) {
        guard let name = prepared.removeValue(forKey: sql) else { return }
        try executeScript("DEALLOCATE \(name)")
    }

    /// Notifications received so far (LISTEN): reads what arrived on the socket without blocking.
    func notifications() throws(StorageError) -> [(channel: String, payload: String)] {
        guard let handle else { throw StorageError(kind: .io, message: "the PostgreSQL connection is closed") }
        guard appd_PQconsumeInput(handle) == 1 else {
            throw StorageError(kind: .io, message: "lost the PostgreSQL connection: \(String(cString: appd_PQerrorMessage(handle)).trimmingWhitespace())")
        }
        var received: [(String, String)] = []
        while let notification = appd_PQnotifies(handle) {
            received.append((String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            appd_PQfreemem(notification)
        }
        return received
    }

    /// Blocks until the server sends something or `milliseconds` pass.
    func waitReadable(milliseconds: Int32) throws(StorageError) {
        guard let handle, appd_pq_wait_readable(handle, milliseconds) >= 0 else {
            throw StorageError(kind: .io, message: "the PostgreSQL connection is closed")
        }
    }

    // MARK: Parameters and rows

    /// Text parameters with unspecified types (PostgreSQL infers them); blobs as binary bytea.
    static func withParameters<R>(
        _ parameters: [SQLValue],
        _ body: (UnsafePointer<Oid>, UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<Int32>, UnsafePointer<Int32>) -> R
    ) throws(StorageError) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        var owned: [UnsafeMutablePointer<CChar>] = []
        var types: [Oid] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for pointer in owned { pointer.deallocate() } }
        func add(_ bytes: some Collection<UInt8>, type: Oid = 0, binary: Bool = false) {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            var i = 0
            for byte in bytes { buffer[i] = CChar(bitPattern: byte); i += 1 }
            buffer[i] = 0
            owned.append(buffer)
            pointers.append(UnsafePointer(buffer))
            types.append(type)
            lengths.append(Int32(bytes.count))
            formats.append(binary ? 1 : 0)
        }
        for value in parameters {
            switch value {
            case .null:
                pointers.append(nil); types.append(0); lengths.append(0); formats.append(0)
            case .integer(let i): add(String(i).utf8)
            case .real(let d): add("\(d)".utf8)
            case .text(let s):
                // PostgreSQL text cannot hold NUL: refuse rather than store a cut-off value
                // (`alice@example.com\0junk` must never be read as alice's address).
                guard !s.utf8.contains(0) else {
                    throw StorageError(kind: .constraint, message: "text with a NUL byte cannot be stored in PostgreSQL")
                }
                add(s.utf8)
            case .blob(let b): add(b, type: 17, binary: true)
            }
        }
        return body(types, pointers, lengths, formats)
    }

    private static func rows(_ result: OpaquePointer?) -> [Row] {
        let count = appd_PQntuples(result)
        let fields = appd_PQnfields(result)
        guard count > 0 else { return [] }
        let names = (0..<fields).map { String(cString: appd_PQfname(result, $0)) }
        let types = (0..<fields).map { appd_PQftype(result, $0) }
        var rows: [Row] = []
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(fields))
            for field in 0..<fields {
                if appd_PQgetisnull(result, row, field) == 1 {
                    values.append(.null)
                    continue
                }
                let length = Int(appd_PQgetlength(result, row, field))
                let raw = UnsafeRawPointer(appd_PQgetvalue(result, row, field)!).assumingMemoryBound(to: UInt8.self)
                let text = String(decoding: UnsafeBufferPointer(start: raw, count: length), as: UTF8.self)
                values.append(value(text, type: types[Int(field)]))
            }
            rows.append(Row(columns: names, values: values))
        }
        return rows
    }

    /// A text-format value as the SQLite-shaped value repositories read.
    private static func value(_ text: String, type: Oid) -> SQLValue {
        switch type {
        case 20, 21, 23, 26: return Int64(text).map(SQLValue.integer) ?? .text(text)  // int8, int2, int4, oid
        case 16: return .integer(text == "t" ? 1 : 0)  // bool
        case 700, 701: return Double(text).map(SQLValue.real) ?? .text(text)  // float4, float8
        case 1700: return Int64(text).map(SQLValue.integer) ?? Double(text).map(SQLValue.real) ?? .text(text)  // numeric (SUM, AVG)
        case 17: return .blob(hexBytes(text))  // bytea, hex output
        default: return .text(text)
        }
    }

    private static func hexBytes(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var high: UInt8?
        for c in text.utf8.dropFirst(2) {
            let nibble: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = c - UInt8(ascii: "a") + 10
            default: continue
            }
            if let h = high { bytes.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        return bytes
    }

    // MARK: Placeholders and errors

    /// `?` outside quotes → `$1`, `$2`, … in order.
    static func numberPlaceholders(_ sql: String) -> String {
        var out = ""
        out.reserveCapacity(sql.utf8.count + 16)
        var quote: Character?
        var index = 0
        for ch in sql {
            if let q = quote {
                if ch == q { quote = nil }
                out.append(ch)
            } else if ch == "'" || ch == "\"" {
                quote = ch
                out.append(ch)
            } else if ch == "?" {
                index += 1
                out += "$\(index)"
            } else {
                out.append(ch)
            }
        }
        return out
    }

    private func error(_ result: OpaquePointer?) -> StorageError {
        let state = appd_pq_sqlstate(result).map { String(cString: $0) } ?? ""
        let message =
            appd_pq_message(result).map { String(cString: $0) }
            ?? handle.map { String(cString: appd_PQerrorMessage($0)).trimmingWhitespace() } ?? "unknown error"
        return Self.error(state: state, message: message)
    }

    /// SQLSTATE classes to the kinds repositories act on.
    static func error(state: String, message: String) -> StorageError {
        let kind: StorageError.Kind
        switch state {
        case "40001", "40P01", "55P03", "57014": kind = .busy  // serialization, deadlock, lock timeout, statement timeout
        case _ where state.hasPrefix("23"): kind = .constraint
        case "53100": kind = .full
        case "XX001", "XX002": kind = .corrupt
        case "25006", "42501": kind = .readOnly
        case "": kind = .io  // no result: the connection broke
        case _ where state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53"): kind = .io
        default: kind = .other
        }
        var error = StorageError(kind: kind, message: state.isEmpty ? message : "\(message) (SQLSTATE \(state))")
        error.sqlState = state.isEmpty ? nil : state
        return error
    }
}
