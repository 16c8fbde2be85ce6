// SPDX-License-Identifier: Apache-2.0
import Bus
import Crypto

/// Ids the server makes for rows it adds often (a todo added without a client id, a chat message):
/// the plugin's prefix, 8 characters of the time in milliseconds that sort as the time does,
/// then 12 random characters (72 bits). Time first keeps new rows at the end of the id's index,
/// as its other indexes are: a wholly random id puts every insert on a random index page, one
/// more page written (and later checkpointed) per durable write.
public enum RecordID {
    /// `prefix` + 20 characters of `-0-9A-Z_a-z` (URL-safe, as the random ids before).
    public static func generate(prefix: String, now: WallTime = .now()) throws -> String {
        let milliseconds = UInt64(max(0, now.nanosecondsSinceEpoch / 1_000_000))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20)
        for shift in stride(from: 42, through: 0, by: -6) {  // 48 bits: any WallTime (to 2262)
            bytes.append(sortable[Int((milliseconds >> UInt64(shift)) & 63)])
        }
        let random = try Digest.randomBytes(9)  // 72 bits: 12 characters, 4 for each 3 bytes
        for i in stride(from: 0, to: 9, by: 3) {
            let group = UInt32(random[i]) << 16 | UInt32(random[i + 1]) << 8 | UInt32(random[i + 2])
            for shift in stride(from: 18, through: 0, by: -6) { bytes.append(sortable[Int((group >> UInt32(shift)) & 63)]) }
        }
        return prefix + String(decoding: bytes, as: UTF8.self)
    }

    /// 64 URL-safe characters in ASCII order, so ids compare as their times do.
    static let sortable = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)
}
