/// A page of rows bounded by bytes as well as by rows: a page of 500 todos of 40 KB notes each
/// would be a 20 MB reply, held in appd's memory for as long as the client leaves it unread. The
/// query is wrapped so the database stops at the budget too (it never hands over more than
/// one row past it); `split` keeps the rows that fit and says whether the budget cut the page.
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
        let size = columns.map { column in
            dialect == .postgres ? "COALESCE(octet_length(\(column)), 0)" : "COALESCE(length(CAST(\(column) AS BLOB)), 0)"
        }.joined(separator: " + ") + " + \(rowOverhead)"
        // The second row comes back even after a first row past the budget, so a cut is seen.
        return "SELECT * FROM (SELECT page.*, (\(size)) AS page_row_bytes, ROW_NUMBER() OVER (ORDER BY \(orderBy)) AS page_row, "
            + "SUM(\(size)) OVER (ORDER BY \(orderBy) ROWS UNBOUNDED PRECEDING) - (\(size)) AS page_bytes_before "
            + "FROM (\(inner)) AS page) AS bounded WHERE page_bytes_before <= ? OR page_row <= 2 ORDER BY \(orderBy)"
    }

    public func parameters(_ inner: [SQLValue]) -> [SQLValue] { inner + [.integer(Int64(budget))] }

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
