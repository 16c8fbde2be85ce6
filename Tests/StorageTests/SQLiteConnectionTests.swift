// SPDX-License-Identifier: Apache-2.0
import BusCore
import Testing
import TestSupport
@testable import Storage

@Suite struct SQLiteConnectionTests {
    /// The statement cache hashes a text by its length and its ends: texts alike in all three
    /// and different in the middle are still different statements, each with its own columns.
    @Test func statementsAlikeButInTheMiddleAreKeptApart() throws {
        let dir = temporaryDirectory()
        defer { removeDirectory(dir) }
        let connection = try SQLiteConnection(path: dir + "/t.db", busyTimeoutMilliseconds: 1000)
        let head = "SELECT /* the same first thirty-two bytes and more */ ", tail = " /* and the same last thirty-two bytes and more */"
        let one = head + "'one' AS a" + tail, two = head + "'two' AS b" + tail
        #expect(one.utf8.count == two.utf8.count)
        for _ in 0..<2 {
            #expect(try connection.run(one, []).first?.text("a") == "one")
            #expect(try connection.run(two, []).first?.text("b") == "two")
            #expect(try connection.run(two, []).first?.text("a") == nil)
        }
    }
}
