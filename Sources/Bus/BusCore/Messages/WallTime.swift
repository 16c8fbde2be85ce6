// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A wall-clock instant in nanoseconds since the Unix epoch, for envelopes and logs.
public struct WallTime: Hashable, Sendable, Comparable, Codable {
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) { self.nanosecondsSinceEpoch = nanosecondsSinceEpoch }

    public static func now() -> WallTime {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return WallTime(nanosecondsSinceEpoch: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }

    public var secondsSinceEpoch: Double { Double(nanosecondsSinceEpoch) / 1e9 }

    public static func < (a: WallTime, b: WallTime) -> Bool { a.nanosecondsSinceEpoch < b.nanosecondsSinceEpoch }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-30T00:20:18.123Z`. Written digit by
    /// digit into one small buffer: every todo, event and session in a reply has timestamps.
    /// The date is computed from the day number (Howard Hinnant's `civil_from_days`), not by
    /// `gmtime_r`, which takes the C library's time-zone lock on every call. Every `Int64` of
    /// nanoseconds is a year between 1677 and 2262: four digits.
    public var rfc3339: String {
        // Floor division: an instant before 1970 with a fraction is in the second before.
        let (quotient, remainder) = nanosecondsSinceEpoch.quotientAndRemainder(dividingBy: 1_000_000_000)
        let seconds = remainder < 0 ? quotient - 1 : quotient
        let millis = Int((remainder < 0 ? remainder + 1_000_000_000 : remainder) / 1_000_000)
        let (dayQuotient, secondOfDay) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let days = Int(secondOfDay < 0 ? dayQuotient - 1 : dayQuotient)
        let second = Int(secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay)
        let (year, month, day) = Self.civil(fromDays: days)
        return String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int, width: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, width: 4, at: 0)
            buffer[4] = UInt8(ascii: "-")
            put(month, width: 2, at: 5)
            buffer[7] = UInt8(ascii: "-")
            put(day, width: 2, at: 8)
            buffer[10] = UInt8(ascii: "T")
            put(second / 3600, width: 2, at: 11)
            buffer[13] = UInt8(ascii: ":")
            put(second / 60 % 60, width: 2, at: 14)
            buffer[16] = UInt8(ascii: ":")
            put(second % 60, width: 2, at: 17)
            buffer[19] = UInt8(ascii: ".")
            put(millis, width: 3, at: 20)
            buffer[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (day 0).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468  // days from 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097  // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365  // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365, from March 1
        let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0...11
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
