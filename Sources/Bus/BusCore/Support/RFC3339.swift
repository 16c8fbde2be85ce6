// SPDX-License-Identifier: Apache-2.0
/// Parses RFC 3339 timestamps (`2026-12-01T09:30:00Z`, `…T09:30:00.250+02:00`) into UTC.
public enum RFC3339 {
    public static func parse(_ text: String) -> WallTime? {
        let b = Array(text.utf8)
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= b.count else { return nil }
            var value = 0
            for i in at..<(at + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int(b[i] - 48)
            }
            return value
        }
        func at(_ i: Int, _ ch: Character) -> Bool { i < b.count && b[i] == ch.asciiValue }
        guard let year = digits(0, 4), at(4, "-"), let month = digits(5, 2), at(7, "-"), let day = digits(8, 2),
            at(10, "T") || at(10, "t") || at(10, " "), let hour = digits(11, 2), at(13, ":"), let minute = digits(14, 2),
            at(16, ":"), let second = digits(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var nanos = 0
        if at(i, ".") {
            i += 1
            var scale = 100_000_000
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                nanos += Int(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start, i - start <= 9 else { return nil }
        }
        var offset = 0
        if at(i, "Z") || at(i, "z") {
            i += 1
        } else if at(i, "+") || at(i, "-") {
            guard let oh = digits(i + 1, 2), at(i + 3, ":"), let om = digits(i + 4, 2), oh < 24, om < 60 else { return nil }
            offset = (oh * 60 + om) * 60 * (at(i, "-") ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count, day <= daysIn(month, year) else { return nil }
        let days = daysFromCivil(year, month, day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offset)
        // Nanoseconds since 1970 in an Int64 reach only from 1677 to 2262.
        guard seconds > -9_223_372_035, seconds < 9_223_372_035 else { return nil }
        return WallTime(nanosecondsSinceEpoch: seconds * 1_000_000_000 + Int64(nanos))
    }

    static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    static func daysFromCivil(_ y: Int, _ m: Int, _ d: Int) -> Int {
        let year = m <= 2 ? y - 1 : y
        let era = (year >= 0 ? year : year - 399) / 400
        let yoe = year - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
