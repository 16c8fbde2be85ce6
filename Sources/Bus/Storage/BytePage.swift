// SPDX-License-Identifier: Apache-2.0
/// A page of rows bounded by bytes as well as by rows: a page of 500 todos of 40 KB notes each
/// would be a 20 MB reply, held in appd's memory for as long as the client leaves it unread.
/// `rows(_:in:)` runs the page's query so the database stops at the budget too: SQLite steps row
/// by row and stops at the first row past it; PostgreSQL, which sends a result whole, runs the
/// query wrapped in a running sum (`sql`) and never sends more than one row past the budget.
/// The first row always fits; a page the budget ended says so (`cut`).
public struct BytePage: Sendable {
    /// What a page may hold: the measured columns' UTF-8 bytes plus `rowOverhead` per row.
    public let budget: Int
    /// The text columns whose bytes are counted.
    public let columns: [String]
    /// What a row costs beyond its measured columns (ids, times, JSON members).
    public let rowOverhead: Int

    /// 1 MiB: a page a client leaves unread holds at most that (plus one row) of appd's memory.
    public static let defaultBudget = 1 << 20

    public init(budget: Int = BytePage.defaultBudget, columns: [String], rowOverhead: Int = 256) {
        self.budget = max(1, budget)
        self.columns = columns
        self.rowOverhead = rowOverhead
    }

    /// `inner` (ordered by `orderBy`, with its own LIMIT) cut where the bytes of the rows before
    /// a row pass the budget; bind `budget` after `inner`'s parameters (`parameters(_:)`).
    public func sql(_ inner: String, orderBy: String, dialect: SQLDialect) -> String {
        let size =
            columns.map { column in
                dialect == .postgres ? "COALESCE(octet_length(\(column)), 0)" : "COALESCE(length(CAST(\(column) AS BLOB)), 0)"
            }.joined(separator: " + ") + " + \(rowOverhead)"
        // The second row comes back even after a first row past the budget, so a cut is seen.
        return "SELECT * FROM (SELECT page.*, (\(size)) AS page_row_bytes, ROW_NUMBER() OVER (ORDER BY \(orderBy)) AS page_row, "
            + "SUM(\(size)) OVER (ORDER BY \(orderBy) ROWS UNBOUNDED PRECEDING) - (\(size)) AS page_bytes_before "
            + "FROM (\(inner)) AS page) AS bounded WHERE page_bytes_before <= ? OR page_row <= 2 ORDER BY \(orderBy)"
    }

    public func parameters(_ inner: [SQLValue]) -> [SQLValue] { inner + [.integer(Int64(budget))] }

    /// The rows of `inner` (ordered by `orderBy`, with its own LIMIT) that fit, and whether the
    /// budget left rows out.
    public func rows(_ inner: String, orderBy: String, _ parameters: [SQLValue], in tx: any Transaction) throws -> (shown: [Row], cut: Bool) {
        try tx.page(self, inner, orderBy: orderBy, parameters)
    }

    /// What a row costs: its measured columns' UTF-8 bytes and the overhead.
    public func size(of row: Row) -> Int {
        columns.reduce(rowOverhead) { total, column in
            if case .text(let text) = row[column] { return total + text.utf8.count }
            if case .blob(let bytes) = row[column] { return total + bytes.count }
            return total
        }
    }

    /// The rows that fit (the first always does, whatever its size) and whether the budget
    /// left rows out (then the page ends early and says there is more).
    public func split(_ rows: [Row]) -> (shown: [Row], cut: Bool) {
        var shown: [Row] = []
        for row in rows {
            let end = (row.integer("page_bytes_before") ?? 0) + (row.integer("page_row_bytes") ?? 0)
            if !shown.isEmpty && end > Int64(budget) { return (shown, true) }
            shown.append(row)
        }
        return (shown, false)
    }
}
