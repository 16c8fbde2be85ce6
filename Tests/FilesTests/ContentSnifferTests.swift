// SPDX-License-Identifier: Apache-2.0
@testable import Files
import Testing

@Suite struct ContentSnifferTests {
    @Test func eachTypeIsKnownByItsBytesWithItsPixelSize() {
        #expect(ContentSniffer.sniff(Samples.jpeg(width: 640, height: 480)) == SniffedContent(contentType: "image/jpeg", width: 640, height: 480))
        #expect(ContentSniffer.sniff(Samples.png(width: 3000, height: 2000)) == SniffedContent(contentType: "image/png", width: 3000, height: 2000))
        #expect(ContentSniffer.sniff(Samples.gif(width: 320, height: 200)) == SniffedContent(contentType: "image/gif", width: 320, height: 200))
        #expect(ContentSniffer.sniff(Samples.webpVP8X(width: 1920, height: 1080)) == SniffedContent(contentType: "image/webp", width: 1920, height: 1080))
        // The primary image's extents, not its thumbnail's.
        #expect(ContentSniffer.sniff(Samples.heic(width: 4032, height: 3024)) == SniffedContent(contentType: "image/heic", width: 4032, height: 3024))
        #expect(ContentSniffer.sniff(Samples.pdf) == SniffedContent(contentType: "application/pdf"))
    }

    @Test func aNameOrAClaimIsNotAType() {
        #expect(ContentSniffer.sniff(Array("<html><script>alert(1)</script>".utf8)) == nil)
        #expect(ContentSniffer.sniff([]) == nil)
        #expect(ContentSniffer.sniff([0xFF, 0xD8]) == nil)
        // A JPEG whose frame header is missing is a JPEG of unknown size.
        #expect(ContentSniffer.sniff([0xFF, 0xD8, 0xFF, 0xD9]) == SniffedContent(contentType: "image/jpeg"))
    }

    @Test func byteRangesFollowRFC9110() {
        #expect(ByteRange.parse("bytes=0-9", length: 100) == .part(0, 9))
        #expect(ByteRange.parse("bytes=90-", length: 100) == .part(90, 99))
        #expect(ByteRange.parse("bytes=-10", length: 100) == .part(90, 99))
        #expect(ByteRange.parse("bytes=-500", length: 100) == .part(0, 99))
        #expect(ByteRange.parse("bytes=50-5000", length: 100) == .part(50, 99))
        #expect(ByteRange.parse("bytes=100-", length: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", length: 100) == .unsatisfiable)
        // Ignored (answered whole): several ranges, other units, nonsense.
        #expect(ByteRange.parse("bytes=0-1,5-6", length: 100) == .whole)
        #expect(ByteRange.parse("items=0-1", length: 100) == .whole)
        #expect(ByteRange.parse("bytes=9-1", length: 100) == .whole)
        #expect(ByteRange.parse("bytes=x-1", length: 100) == .whole)
    }
}
