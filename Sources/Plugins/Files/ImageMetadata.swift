// SPDX-License-Identifier: Apache-2.0

/// Strips what a photo says about where and when it was taken, and by which device: EXIF
/// (GPS among it), XMP, IPTC and comments. What decoding needs stays (JFIF, the ICC colour
/// profile, Adobe's colour transform, the tables and the scan), and a JPEG's orientation is
/// kept in a minimal EXIF of its own, so a photo taken upright still shows upright.
enum ImageMetadata {
    /// `bytes` without their metadata, or unchanged when their type carries none appd strips.
    /// Nil when a JPEG or PNG is malformed (its segments or chunks run past the end).
    static func stripped(_ bytes: [UInt8], contentType: String) -> [UInt8]? {
        switch contentType {
        case "image/jpeg": jpeg(bytes)
        case "image/png": png(bytes)
        default: bytes
        }
    }

    private static func jpeg(_ b: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = [0xFF, 0xD8]
        out.reserveCapacity(b.count)
        var orientation: UInt16?
        // Where the EXIF goes: right after SOI, or after a JFIF APP0 that comes first.
        var exifAt = 2
        var i = 2
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { return nil }
            let marker = b[i + 1]
            if marker == 0xFF { i += 1; continue }
            if (0xD0...0xD7).contains(marker) || marker == 0x01 { out += b[i..<i + 2]; i += 2; continue }
            let length = Int(ContentSniffer.be16(b, i + 2))
            guard length >= 2, i + 2 + length <= b.count else { return nil }
            let segment = b[i..<i + 2 + length]
            if marker == 0xDA {
                // The scan: everything from here on is image data.
                if let orientation, orientation != 1 { out.insert(contentsOf: orientationSegment(orientation), at: exifAt) }
                out += b[i...]
                return out
            }
            switch marker {
            case 0xE1:
                if orientation == nil { orientation = exifOrientation(Array(segment.dropFirst(4))) }
            case 0xE0, 0xE2, 0xEE:  // JFIF, ICC profile, Adobe
                if marker == 0xE0 && out.count == 2 { exifAt = 2 + segment.count }
                out += segment
            case 0xE3...0xEF, 0xFE:  // other application segments, comments
                break
            default:
                out += segment
            }
            i += 2 + length
        }
        return nil
    }

    /// A JPEG's EXIF orientation (1–8), if it says one.
    static func orientation(ofJPEG b: [UInt8]) -> UInt16? {
        var i = 2
        while i + 4 <= b.count, b[i] == 0xFF {
            let marker = b[i + 1]
            if marker == 0xDA || marker == 0xD9 { return nil }
            let length = Int(ContentSniffer.be16(b, i + 2))
            guard length >= 2, i + 2 + length <= b.count else { return nil }
            if marker == 0xE1, let value = exifOrientation(Array(b[i + 4..<i + 2 + length])) { return value }
            i += 2 + length
        }
        return nil
    }

    /// `jpeg` (as libjpeg writes it: SOI, JFIF, …) with an EXIF of `value` after its JFIF.
    static func withOrientation(_ jpeg: [UInt8], _ value: UInt16) -> [UInt8] {
        guard value != 1, jpeg.count > 4 else { return jpeg }
        var at = 2
        if jpeg[2] == 0xFF && jpeg[3] == 0xE0 { at = 4 + Int(ContentSniffer.be16(jpeg, 4)) }
        var out = jpeg
        out.insert(contentsOf: orientationSegment(value), at: at)
        return out
    }

    /// The orientation tag (0x0112) of IFD0 in an APP1 segment's body, if it is EXIF.
    private static func exifOrientation(_ body: [UInt8]) -> UInt16? {
        guard body.count >= 14, body.starts(with: Array("Exif".utf8) + [0, 0]) else { return nil }
        let tiff = Array(body[6...])
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ i: Int) -> Int? { i + 2 <= tiff.count ? Int(little ? ContentSniffer.le16(tiff, i) : ContentSniffer.be16(tiff, i)) : nil }
        func u32(_ i: Int) -> Int? {
            guard i + 4 <= tiff.count else { return nil }
            return little ? Int(tiff[i]) | Int(tiff[i + 1]) << 8 | Int(tiff[i + 2]) << 16 | Int(tiff[i + 3]) << 24 : Int(ContentSniffer.be32(tiff, i))
        }
        guard let ifd = u32(4), let count = u16(ifd) else { return nil }
        for entry in 0..<min(count, 512) {
            let at = ifd + 2 + entry * 12
            guard let tag = u16(at) else { return nil }
            if tag == 0x0112, let value = u16(at + 8), (1...8).contains(value) { return UInt16(value) }
        }
        return nil
    }

    /// An APP1 segment with an EXIF of one tag, the orientation.
    private static func orientationSegment(_ value: UInt16) -> [UInt8] {
        let body: [UInt8] =
            Array("Exif".utf8) + [0, 0] + [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8] + [0, 1]
            + [0x01, 0x12, 0x00, 0x03, 0, 0, 0, 1, UInt8(value >> 8), UInt8(value & 0xFF), 0, 0] + [0, 0, 0, 0]
        let length = body.count + 2
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + body
    }

    /// A PNG without its text (tEXt, zTXt, iTXt), time (tIME) and EXIF (eXIf) chunks.
    private static func png(_ b: [UInt8]) -> [UInt8]? {
        var out = Array(b[0..<8])
        var i = 8
        while i + 12 <= b.count {
            let length = Int(ContentSniffer.be32(b, i))
            guard length <= b.count, i + 12 + length <= b.count else { return nil }
            let type = String(decoding: b[i + 4..<i + 8], as: UTF8.self)
            if !["tEXt", "zTXt", "iTXt", "tIME", "eXIf"].contains(type) { out += b[i..<i + 12 + length] }
            i += 12 + length
            if type == "IEND" { return out }
        }
        return nil
    }
}
