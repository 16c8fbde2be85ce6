// SPDX-License-Identifier: Apache-2.0

/// What a file's bytes say it is: its type from its signature (never from the name or the
/// client's word) and, for an image, its size in pixels read from its header.
struct SniffedContent: Sendable, Equatable {
    var contentType: String
    var width: Int?
    var height: Int?
    var isImage: Bool { contentType.hasPrefix("image/") }
}

/// Recognises JPEG, PNG, GIF, WebP, HEIC/HEIF and PDF. Reads headers only: an image is never
/// decoded here, so a decompression bomb costs nothing to refuse by its declared size.
enum ContentSniffer {
    /// The types it recognises, for the operator's allow-list.
    static let known = ["image/jpeg", "image/png", "image/gif", "image/webp", "image/heic", "application/pdf"]

    static func sniff(_ b: [UInt8]) -> SniffedContent? {
        if b.starts(with: [0xFF, 0xD8, 0xFF]) {
            let size = jpegSize(b)
            return SniffedContent(contentType: "image/jpeg", width: size?.0, height: size?.1)
        }
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            guard b.count >= 24, Array(b[12..<16]) == Array("IHDR".utf8) else { return SniffedContent(contentType: "image/png") }
            return SniffedContent(contentType: "image/png", width: Int(be32(b, 16)), height: Int(be32(b, 20)))
        }
        if b.starts(with: Array("GIF87a".utf8)) || b.starts(with: Array("GIF89a".utf8)) {
            guard b.count >= 10 else { return SniffedContent(contentType: "image/gif") }
            return SniffedContent(contentType: "image/gif", width: Int(le16(b, 6)), height: Int(le16(b, 8)))
        }
        if b.count >= 16, b.starts(with: Array("RIFF".utf8)), Array(b[8..<12]) == Array("WEBP".utf8) {
            let size = webpSize(b)
            return SniffedContent(contentType: "image/webp", width: size?.0, height: size?.1)
        }
        if b.count >= 12, Array(b[4..<8]) == Array("ftyp".utf8),
            ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"].contains(String(decoding: b[8..<12], as: UTF8.self))
        {
            let size = heifSize(b)
            return SniffedContent(contentType: "image/heic", width: size?.0, height: size?.1)
        }
        if b.starts(with: Array("%PDF-".utf8)) { return SniffedContent(contentType: "application/pdf") }
        return nil
    }

    /// The frame header's size (SOF0–SOF15 but DHT, JPG and DAC), walking the segments.
    private static func jpegSize(_ b: [UInt8]) -> (Int, Int)? {
        var i = 2
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { return nil }
            let marker = b[i + 1]
            if marker == 0xFF { i += 1; continue }  // fill byte
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { i += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return nil }  // the scan (or the end) before a frame header
            let length = Int(be16(b, i + 2))
            guard length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard i + 9 <= b.count else { return nil }
                return (Int(be16(b, i + 7)), Int(be16(b, i + 5)))
            }
            i += 2 + length
        }
        return nil
    }

    private static func webpSize(_ b: [UInt8]) -> (Int, Int)? {
        let chunk = String(decoding: b[12..<16], as: UTF8.self)
        switch chunk {
        case "VP8 " where b.count >= 30 && b[23] == 0x9D && b[24] == 0x01 && b[25] == 0x2A:
            return (Int(le16(b, 26) & 0x3FFF), Int(le16(b, 28) & 0x3FFF))
        case "VP8L" where b.count >= 25 && b[20] == 0x2F:
            let bits = UInt32(b[21]) | UInt32(b[22]) << 8 | UInt32(b[23]) << 16 | UInt32(b[24]) << 24
            return (Int(bits & 0x3FFF) + 1, Int((bits >> 14) & 0x3FFF) + 1)
        case "VP8X" where b.count >= 30:
            let width = Int(b[24]) | Int(b[25]) << 8 | Int(b[26]) << 16
            let height = Int(b[27]) | Int(b[28]) << 8 | Int(b[29]) << 16
            return (width + 1, height + 1)
        default: return nil
        }
    }

    /// The largest `ispe` (image spatial extents) property in the first 256 KiB: the primary
    /// image's (the others are its thumbnails and tiles).
    private static func heifSize(_ b: [UInt8]) -> (Int, Int)? {
        let tag = Array("ispe".utf8)
        var best: (Int, Int)?
        var i = 0
        let limit = min(b.count, 256 * 1024)
        while i + 16 <= limit {
            if b[i] == tag[0] && b[i + 1] == tag[1] && b[i + 2] == tag[2] && b[i + 3] == tag[3] {
                let width = Int(be32(b, i + 8)), height = Int(be32(b, i + 12))
                if width * height > (best.map { $0.0 * $0.1 } ?? 0) { best = (width, height) }
                i += 16
            } else {
                i += 1
            }
        }
        return best
    }

    static func be16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) << 8 | UInt16(b[i + 1]) }
    static func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func be32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]) }
}
