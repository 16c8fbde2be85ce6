// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A UTC calendar period (day, ISO week from Monday, month, year) and its bounds: the windows
/// free quotas reset on.
public enum CalendarPeriod: String, Sendable, CaseIterable {
    case day, week, month, year

    /// The start (inclusive) and end (exclusive) of the period that contains `time`.
    public func bounds(containing time: WallTime) -> (start: WallTime, end: WallTime) {
        let dayNanos: Int64 = 86_400_000_000_000
        let days = Int(time.nanosecondsSinceEpoch >= 0 ? time.nanosecondsSinceEpoch / dayNanos : (time.nanosecondsSinceEpoch + 1) / dayNanos - 1)
        var seconds = time_t(Int64(days) * 86_400)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let year = Int(parts.tm_year) + 1900, month = Int(parts.tm_mon) + 1
        let (first, next): (Int, Int)
        switch self {
        case .day:
            (first, next) = (days, days + 1)
        case .week:
            // 1970-01-01 was a Thursday; weeks start on Monday.
            let monday = days - ((days + 3) % 7 + 7) % 7
            (first, next) = (monday, monday + 7)
        case .month:
            (first, next) = (
                RFC3339.daysFromCivil(year, month, 1), month == 12 ? RFC3339.daysFromCivil(year + 1, 1, 1) : RFC3339.daysFromCivil(year, month + 1, 1)
            )
        case .year:
            (first, next) = (RFC3339.daysFromCivil(year, 1, 1), RFC3339.daysFromCivil(year + 1, 1, 1))
        }
        return (WallTime(nanosecondsSinceEpoch: Int64(first) * dayNanos), WallTime(nanosecondsSinceEpoch: Int64(next) * dayNanos))
    }
}
