// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Storage

/// A row is read by column name: the named column's value whatever the names around it (same
/// length, same prefix, longer than a small string), `.null` for a name it does not have.
@Suite struct RowTests {
    @Test func aColumnIsFoundByItsNameAmongNamesOfTheSameLength() {
        let long = "a_column_name_longer_than_fifteen_bytes"
        let row = Row(
            columns: ["id", "due_at", "done", "notes", "title", "created_at", "updated_at", long, "é"],
            values: [.text("t_1"), .integer(3), .integer(1), .null, .text("milk"), .integer(5), .integer(6), .text("long"), .text("accent")])
        #expect(row.text("id") == "t_1" && row.text("title") == "milk" && row.text("notes") == nil)
        #expect(row.integer("done") == 1 && row.integer("due_at") == 3)
        #expect(row.integer("created_at") == 5 && row.integer("updated_at") == 6)
        #expect(row.text(String(long)) == "long" && row.text("é") == "accent")
        #expect(row["missing"] == .null && row["titles"] == .null && row["titl"] == .null && row[""] == .null)
    }
}
