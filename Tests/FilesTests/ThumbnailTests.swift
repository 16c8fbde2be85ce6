// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
@testable import Files
import HTTP
import TestSupport
import Testing

@Suite(.cleansUp) struct ThumbnailTests {
    /// A real JPEG (libjpeg's) of `width` × `height`, a gradient, with an EXIF orientation.
    static func photo(width: Int, height: Int, orientation: UInt16 = 6) throws -> [UInt8] {
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width { rgb.replaceSubrange((y * width + x) * 3..<(y * width + x) * 3 + 3, with: [UInt8(x % 256), UInt8(y % 256), 128]) }
        }
        return ImageMetadata.withOrientation(try Thumbnailer.encode(rgb: rgb, width: width, height: height), orientation)
    }

    @Test func eachSideSmallerThanThePhotoGetsAThumbnailThatKeepsItsOrientation() async throws {
        let h = try await Harness.files()
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let up = await h.upload(try Self.photo(width: 2000, height: 1000), type: "image/jpeg", as: ada, name: "wide.jpg")
        let file = try #require(up.file, "\(String(describing: up.body))")
        #expect(file.thumbnails == [256, 1024] && file.width == 2000)
        let small = await h.http("GET", "/files/\(file.id)?thumbnail=256", token: ada.accessToken)
        #expect(small.status == 200 && small.header("Content-Type") == "image/jpeg" && small.header("ETag") == "\"\(file.sha256)-t256\"")
        #expect(ContentSniffer.sniff(small.body) == SniffedContent(contentType: "image/jpeg", width: 256, height: 128))
        #expect(ImageMetadata.orientation(ofJPEG: small.body) == 6)
        let large = await h.http("GET", "/files/\(file.id)?thumbnail=1024", token: ada.accessToken)
        #expect(ContentSniffer.sniff(large.body)?.width == 1024 && large.body.count < small.body.count * 20)
        #expect(await h.http("GET", "/files/\(file.id)?thumbnail=300", token: ada.accessToken).status == 400)
        #expect(await h.http("GET", "/files/\(file.id)?thumbnail=256", token: bob.accessToken).status == 404)
        // A signed URL for the file opens its thumbnails too.
        let signed = try await h.bus.send(FilesInterface.SignURL(id: file.id), as: ada.caller)
        #expect(await h.http("GET", signed.path + "&thumbnail=256").body == small.body)
        // A small photo has only the thumbnails smaller than itself; deleting removes them all.
        let tiny = try #require(await h.upload(try Self.photo(width: 300, height: 200), type: "image/jpeg", as: ada).file)
        #expect(tiny.thumbnails == [256])
        _ = try await h.bus.send(FilesInterface.Delete(id: file.id), as: ada.caller)
        _ = try await h.bus.send(FilesInterface.Delete(id: tiny.id), as: ada.caller)
        #expect(FilesPluginTests.storedFiles(h.files.options.directory) == 0)
    }

    @Test func anImageThatDoesNotDecodeIsRefused() async throws {
        let h = try await Harness.files()
        let ada = try await h.user("ada@example.com")
        // A real photo cut inside its Huffman tables: its header says 2000×1500, libjpeg says no.
        let cut = Array(try Self.photo(width: 2000, height: 1500).prefix(400)) + [0xFF, 0xD9]
        #expect(ContentSniffer.sniff(cut)?.width == 2000)
        let fake = await h.upload(cut, type: "image/jpeg", as: ada)
        #expect(fake.status == 400 && fake.body?["error"] == "io.appd.Files.ValidationFailed", "\(String(describing: fake.body))")
        #expect(try await h.bus.send(FilesInterface.Usage(), as: ada.caller).files == 0)
        #expect(FilesPluginTests.storedFiles(h.files.options.directory) == 0)
    }

    @Test func thumbnailsAreMadeFromAFractionOfAJPEGsPixels() throws {
        // 4000 × 3000 decoded at 1/8 (500 × 375) to make 256: quick and small, whatever the photo.
        let photo = try Self.photo(width: 4000, height: 3000, orientation: 1)
        let thumbnail = try Thumbnailer.thumbnail(photo, png: false, maxSide: 256, maxSourcePixels: 40_000_000)
        #expect(ContentSniffer.sniff(thumbnail) == SniffedContent(contentType: "image/jpeg", width: 256, height: 192))
        #expect(throws: ThumbnailError.self) { try Thumbnailer.thumbnail(Array(photo.prefix(600)) + [0xFF, 0xD9], png: false, maxSide: 256, maxSourcePixels: 1) }
    }
}
