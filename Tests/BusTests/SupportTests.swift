// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import Testing

@Suite struct SupportTests {
    /// The text form a message id is logged and stored in: 8 hex digits of the instance, the
    /// sequence in hex without leading zeros; read back to the same id.
    @Test func messageIDsAreWrittenAsHexAndReadBack() {
        let cases: [(MessageID, String)] = [
            (MessageID(sequence: 0, instance: 0), "00000000-0"),
            (MessageID(sequence: 255, instance: 0xdead_beef), "deadbeef-ff"),
            (MessageID(sequence: 0x10, instance: 0xf), "0000000f-10"),
            (MessageID(sequence: .max, instance: .max), "ffffffff-ffffffffffffffff"),
        ]
        for (id, text) in cases {
            #expect(id.description == text)
            #expect(MessageID(text) == id)
        }
    }

    @Test func editDistanceSuggestsOnlyCloseWords() {
        #expect(EditDistance.between("stauts", "status") == 2)
        #expect(EditDistance.closest(to: "stauts", in: ["ping", "status", "shutdown"]) == "status")
        #expect(EditDistance.closest(to: "xyzzy", in: ["ping", "status"]) == nil)
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1_764_462_018_123_456_789, "2025-11-30T00:20:18.123Z"),
        (951_782_400_000_000_000, "2000-02-29T00:00:00.000Z"),
        (Int64.max, "2262-04-11T23:47:16.854Z"),
        (-1_000_000, "1969-12-31T23:59:59.999Z"),
        (Int64.min, "1677-09-21T00:12:43.145Z"),
    ])
    func wallTimeIsWrittenAsRFC3339InUTCWithMilliseconds(nanoseconds: Int64, text: String) {
        #expect(WallTime(nanosecondsSinceEpoch: nanoseconds).rfc3339 == text)
    }

    /// The date arithmetic agrees with the C library's `gmtime_r` on instants across the whole
    /// range (every day boundary near them too), before and after 1970.
    @Test func wallTimeAgreesWithGmtimeAcrossTheRange() {
        var generator = SystemRandomNumberGenerator()
        var instants: [Int64] = [0, -1, 1, 86_399_999_999_999, 86_400_000_000_000, -86_400_000_000_000, -86_400_000_000_001, Int64.max, Int64.min]
        for _ in 0..<20_000 { instants.append(Int64.random(in: Int64.min...Int64.max, using: &generator)) }
        // Every day of a few leap-year boundaries (1700, 1900, 2000, 2100: century rules), at
        // their first and last millisecond.
        for year in [1700, 1900, 2000, 2100, 2024] {
            let start = Int64(year - 1970) * 365 * 86_400 * 1_000_000_000
            for day in Int64(-400)...400 {
                let instant = start + day * 86_400_000_000_000
                instants += [instant, instant - 1_000_000]
            }
        }
        for nanoseconds in instants {
            let (quotient, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
            var seconds = time_t(remainder < 0 ? quotient - 1 : quotient)
            let millis = (remainder < 0 ? remainder + 1_000_000_000 : remainder) / 1_000_000
            var parts = tm()
            gmtime_r(&seconds, &parts)
            func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
            let expected =
                "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
                + String(repeating: "0", count: 3 - String(millis).count) + "\(millis)Z"
            #expect(WallTime(nanosecondsSinceEpoch: nanoseconds).rfc3339 == expected, "\(nanoseconds)")
            if WallTime(nanosecondsSinceEpoch: nanoseconds).rfc3339 != expected { break }
        }
    }

    @Test func trimmingRemovesOuterWhitespaceOnly() {
        #expect("  a b \n".trimmingWhitespace() == "a b")
        #expect("".trimmingWhitespace() == "")
        #expect(" \t\r\n ".trimmingWhitespace() == "")
        #expect("untouched".trimmingWhitespace() == "untouched")
        // The two-byte fast path and the Character path agree at their edges.
        #expect("a".trimmingWhitespace() == "a")
        #expect(" a".trimmingWhitespace() == "a")
        #expect("a\u{A0}".trimmingWhitespace() == "a", "a no-break space is trimmed")
        #expect("\u{2003}a\u{2003}".trimmingWhitespace() == "a", "an em space is trimmed")
        #expect("\u{301}a".trimmingWhitespace() == "\u{301}a", "a leading combining mark is not white space")
        #expect("x\u{600}a".trimmingWhitespace() == "x\u{600}a")
        #expect("é a é".trimmingWhitespace() == "é a é")
        // Against the Character-by-Character definition, on strings built from edge cases.
        let pieces = ["a", "~", "!", " ", "\t", "\r\n", "\u{A0}", "\u{2003}", "\u{301}", "\u{600}", "é", "\u{1F600}", "\u{200D}"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let text = (0..<Int.random(in: 0...4, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let characters = Array(text)
            let kept = characters.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
            #expect(text.trimmingWhitespace() == String(kept), "\(text.unicodeScalars.map { $0.value })")
        }
        #expect("x".trimmingWhitespace() == "x")
        #expect("\u{00A0}café au lait\u{2003}".trimmingWhitespace() == "café au lait")
        #expect("  é ".trimmingWhitespace() == "é")
        #expect("a\r\n".trimmingWhitespace() == "a")
        #expect("  a b ".dropFirst().trimmingWhitespace() == "a b")
        #expect("  ".dropFirst().trimmingWhitespace() == "")
    }

    @Test func makeDirectoriesCreatesMissingParentsWithTheMode() throws {
        let base = "/tmp/appd-fs-\(getpid())-\(Int.random(in: 0...1_000_000))"
        try FileSystem.makeDirectories(base + "/a/b", mode: 0o700)
        try FileSystem.makeDirectories(base + "/a/b", mode: 0o700)  // again: fine
        var info = stat()
        #expect(stat(base + "/a/b", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(FileSystem.parent(of: base + "/a/b") == base + "/a")
        rmdir(base + "/a/b"); rmdir(base + "/a"); rmdir(base)
    }
}
