// SPDX-License-Identifier: Apache-2.0
@testable import Files
import Testing

@Suite struct ImageMetadataTests {
    @Test func aJPEGLosesWhereAndWhoButKeepsItsOrientationAndPixels() throws {
        let original = Samples.jpeg(orientation: 6)
        let stripped = try #require(ImageMetadata.stripped(original, contentType: "image/jpeg"))
        let text = String(decoding: stripped, as: UTF8.self)
        for gone in ["GPS 52.5200", "ACME", "IPTC", "taken at home"] { #expect(!text.contains(gone), "\(gone) is still in the file") }
        // SOI, the JFIF first, then an EXIF of the orientation alone.
        #expect(Array(stripped[0..<4]) == [0xFF, 0xD8, 0xFF, 0xE0])
        let app1 = 2 + 2 + 16
        #expect(Array(stripped[app1..<app1 + 2]) == [0xFF, 0xE1])
        #expect(ImageMetadataTests.orientation(in: stripped) == 6)
        // The tables, the frame and the scan are as they were, to the last byte.
        let scan = try #require(original.firstRange(of: [0xFF, 0xDB]))
        let kept = try #require(stripped.firstRange(of: [0xFF, 0xDB]))
        #expect(Array(stripped[kept.lowerBound...]) == Array(original[scan.lowerBound...]))
        #expect(ContentSniffer.sniff(stripped)?.width == 640)
    }

    @Test func anUprightPhotoGetsNoEXIFAtAll() throws {
        let stripped = try #require(ImageMetadata.stripped(Samples.jpeg(orientation: 1), contentType: "image/jpeg"))
        #expect(stripped.firstRange(of: Array("Exif".utf8)) == nil)
    }

    @Test func aPNGLosesItsTextAndEXIFChunks() throws {
        let original = Samples.png(width: 10, height: 10, text: "secret place")
        let stripped = try #require(ImageMetadata.stripped(original, contentType: "image/png"))
        #expect(stripped.firstRange(of: Array("secret place".utf8)) == nil && stripped.firstRange(of: Array("eXIf".utf8)) == nil)
        #expect(stripped == Samples.png(width: 10, height: 10))
    }

    @Test func damagedFilesAreRefusedNotGuessedAt() {
        var truncated = Samples.jpeg()
        truncated.removeLast(truncated.count - 30)  // inside the EXIF segment
        #expect(ImageMetadata.stripped(truncated, contentType: "image/jpeg") == nil)
        var png = Samples.png(width: 1, height: 1)
        png[8..<12] = [0x7F, 0xFF, 0xFF, 0xFF]  // a chunk longer than the file
        #expect(ImageMetadata.stripped(png, contentType: "image/png") == nil)
        // Types without metadata to strip pass through.
        #expect(ImageMetadata.stripped(Samples.pdf, contentType: "application/pdf") == Samples.pdf)
    }

    /// The orientation tag's value in the first EXIF segment (big-endian, as appd writes it).
    static func orientation(in jpeg: [UInt8]) -> Int? {
        guard let exif = jpeg.firstRange(of: Array("Exif".utf8) + [0, 0]) else { return nil }
        let tiff = exif.upperBound
        guard let tag = jpeg[tiff...].firstRange(of: [0x01, 0x12]) else { return nil }
        return Int(jpeg[tag.lowerBound + 8]) << 8 | Int(jpeg[tag.lowerBound + 9])
    }
}
