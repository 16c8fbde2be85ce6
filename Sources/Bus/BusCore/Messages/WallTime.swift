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
    public var rfc3339: String {
        // Floor division: an instant before 1970 with a fraction is in the second before.
        let (quotient, remainder) = nanosecondsSinceEpoch.quotientAndRemainder(dividingBy: 1_000_000_000)
        var seconds = time_t(remainder < 0 ? quotient - 1 : quotient)
        let millis = Int32((remainder < 0 ? remainder + 1_000_000_000 : remainder) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let year = parts.tm_year + 1900
        guard (0...9999).contains(year) else {
            return "\(year)-\(parts.tm_mon + 1)-\(parts.tm_mday)T\(parts.tm_hour):\(parts.tm_min):\(parts.tm_sec).\(millis)Z"
        }
        return String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int32, width: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, width: 4, at: 0)
            buffer[4] = UInt8(ascii: "-")
            put(parts.tm_mon + 1, width: 2, at: 5)
            buffer[7] = UInt8(ascii: "-")
            put(parts.tm_mday, width: 2, at: 8)
            buffer[10] = UInt8(ascii: "T")
            put(parts.tm_hour, width: 2, at: 11)
            buffer[13] = UInt8(ascii: ":")
            put(parts.tm_min, width: 2, at: 14)
            buffer[16] = UInt8(ascii: ":")
            put(parts.tm_sec, width: 2, at: 17)
            buffer[19] = UInt8(ascii: ".")
            put(millis, width: 3, at: 20)
            buffer[23] = UInt8(ascii: "Z")
            return 24
        }
    }
}
