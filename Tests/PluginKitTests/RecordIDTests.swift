// SPDX-License-Identifier: Apache-2.0
import Bus
import PluginKit
import Testing

@Suite struct RecordIDTests {
    /// Ids made later sort after ids made earlier (new rows go to the end of the id's index), and
    /// ids made in the same millisecond differ.
    @Test func idsSortByTimeAndDifferWithinAMillisecond() throws {
        let start = WallTime(nanosecondsSinceEpoch: 1_780_000_000_123_000_000)
        let times = (0..<200).map { WallTime(nanosecondsSinceEpoch: start.nanosecondsSinceEpoch + Int64($0 / 4) * 1_000_000) }
        let ids = try times.map { try RecordID.generate(prefix: "t_", now: $0) }
        #expect(Set(ids).count == ids.count)
        for (earlier, later) in zip(ids, ids.dropFirst()) where earlier.dropLast(12) != later.dropLast(12) {
            #expect(earlier < later, "\(earlier) made before \(later)")
        }
        #expect(ids.allSatisfy { $0.hasPrefix("t_") && $0.utf8.count == 22 })
        #expect(ids.allSatisfy { $0.dropFirst(2).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") } })
    }

    /// The time part is the millisecond count in 8 characters of the sortable alphabet (48 bits:
    /// every instant a WallTime holds, to 2262); an instant before 1970 counts as the epoch.
    @Test func theTimePartIsTheMillisecondCount() throws {
        #expect(try RecordID.generate(prefix: "", now: WallTime(nanosecondsSinceEpoch: 0)).prefix(8) == "--------")
        #expect(try RecordID.generate(prefix: "", now: WallTime(nanosecondsSinceEpoch: -5)).prefix(8) == "--------")
        #expect(try RecordID.generate(prefix: "", now: WallTime(nanosecondsSinceEpoch: 63 * 1_000_000)).prefix(8) == "-------z")
        #expect(try RecordID.generate(prefix: "", now: WallTime(nanosecondsSinceEpoch: 64 * 1_000_000)).prefix(8) == "------0-")
        let last = try RecordID.generate(prefix: "", now: WallTime(nanosecondsSinceEpoch: .max))
        #expect(last.prefix(8) > (try RecordID.generate(prefix: "", now: .now())).prefix(8))
    }

    /// The random part takes every character of the alphabet (72 bits, not fewer).
    @Test func theRandomPartUsesTheWholeAlphabet() throws {
        var seen = Set<Character>()
        for _ in 0..<400 { seen.formUnion(try RecordID.generate(prefix: "", now: .now()).suffix(12)) }
        #expect(seen.count == 64)
    }
}
