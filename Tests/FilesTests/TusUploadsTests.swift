// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
@testable import Files
import HTTP
import PluginKit
import TestSupport
import Testing

extension PluginHarness {
    /// A tus request for `user` (Tus-Resumable set).
    func tus(_ method: String, _ target: String, as user: TestUser, headers: [String: String] = [:], body: [UInt8] = []) async -> HTTPResponse {
        await http(method, target, token: user.accessToken, headers: ["Tus-Resumable": "1.0.0"].merging(headers) { $1 }, body: body)
    }

    /// Creates an upload of `length` bytes; its path.
    func createUpload(_ length: Int, as user: TestUser, metadata: String? = nil) async -> (status: Int, path: String?) {
        var headers = ["Upload-Length": "\(length)"]
        if let metadata { headers["Upload-Metadata"] = metadata }
        let response = await tus("POST", "/files/uploads", as: user, headers: headers)
        return (response.status, response.header("Location"))
    }
}

@Suite(.cleansUp) struct TusUploadsTests {
    @Test func anUploadSentInPiecesResumesWhereHEADSaysAndBecomesAFile() async throws {
        let h = try await Harness.files { $0.thumbnailSizes = [] }
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let photo = Samples.jpeg(width: 800, height: 600, orientation: 1)
        // filename "beach.jpg", filetype "image/jpeg"
        let created = await h.createUpload(photo.count, as: ada, metadata: "filename YmVhY2guanBn,filetype aW1hZ2UvanBlZw==")
        #expect(created.status == 201)
        let path = try #require(created.path)
        let head = await h.tus("HEAD", path, as: ada)
        #expect(head.status == 200 && head.header("Upload-Offset") == "0" && head.header("Upload-Length") == "\(photo.count)")
        #expect(head.header("Cache-Control") == "no-store" && head.header("Tus-Resumable") == "1.0.0" && head.header("Upload-Expires")?.hasSuffix(" GMT") == true)
        let octets = ["Content-Type": "application/offset+octet-stream"]
        let first = await h.tus("PATCH", path, as: ada, headers: octets.merging(["Upload-Offset": "0"]) { $1 }, body: Array(photo[0..<40]))
        #expect(first.status == 204 && first.header("Upload-Offset") == "40")
        // A client that lost the answer sends the same piece again: 409 and where it stands.
        let stale = await h.tus("PATCH", path, as: ada, headers: octets.merging(["Upload-Offset": "0"]) { $1 }, body: Array(photo[0..<40]))
        #expect(stale.status == 409 && stale.header("Upload-Offset") == "40")
        // Another account cannot see or write it.
        #expect(await h.tus("HEAD", path, as: bob).status == 404)
        #expect(await h.tus("PATCH", path, as: bob, headers: octets.merging(["Upload-Offset": "40"]) { $1 }, body: [1]).status == 404)
        #expect(await h.tus("PATCH", path, as: ada, headers: ["Upload-Offset": "40"], body: [1]).status == 415)
        #expect(await h.tus("PATCH", path, as: ada, headers: octets.merging(["Upload-Offset": "40"]) { $1 }, body: Array(repeating: 0, count: photo.count)).status == 400)
        let resumeAt = try #require(Int(await h.tus("HEAD", path, as: ada).header("Upload-Offset") ?? ""))
        let last = await h.tus("PATCH", path, as: ada, headers: octets.merging(["Upload-Offset": "\(resumeAt)"]) { $1 }, body: Array(photo[resumeAt...]))
        #expect(last.status == 204 && last.header("Upload-Offset") == "\(photo.count)")
        let filePath = try #require(last.header("Appd-File"))
        let file = try #require(try await h.bus.send(FilesInterface.List(), as: ada.caller).files.first)
        #expect(filePath == "/files/\(file.id)" && file.name == "beach.jpg" && file.width == 800)
        // The bytes sent, stripped as a single upload's are.
        #expect(await h.http("GET", filePath, token: ada.accessToken).body == ImageMetadata.stripped(photo, contentType: "image/jpeg"))
        // HEAD after the end (the last answer was lost) names the same file; nothing is stored twice.
        #expect(await h.tus("HEAD", path, as: ada).header("Appd-File") == filePath)
        #expect(try await h.bus.send(FilesInterface.Usage(), as: ada.caller).files == 1)
    }

    @Test func whatIsNotAFileEndsTheUploadAndTheProtocolIsChecked() async throws {
        let h = try await Harness.files {
            $0.pendingUploads = 2; $0.quotaBytes = 1000
        }
        let ada = try await h.user("ada@example.com")
        #expect(await h.http("POST", "/files/uploads", token: ada.accessToken, headers: ["Upload-Length": "10"]).status == 412)
        #expect(await h.tus("POST", "/files/uploads", as: ada).status == 400)  // no Upload-Length
        #expect(await h.tus("POST", "/files/uploads", as: ada, headers: ["Upload-Length": "2000"]).status == 403)  // over the quota
        #expect(await h.tus("POST", "/files/uploads", as: ada, headers: ["Upload-Length": "10", "Upload-Metadata": "filename !!!"]).status == 400)
        let html = Array("<html>hi</html>".utf8)
        let path = try #require(await h.createUpload(html.count, as: ada).path)
        let octets = ["Content-Type": "application/offset+octet-stream", "Upload-Offset": "0"]
        let refused = await h.tus("PATCH", path, as: ada, headers: octets, body: html)
        #expect(refused.status == 415 && refused.header("Tus-Resumable") == "1.0.0")
        #expect(await h.tus("HEAD", path, as: ada).status == 404)  // ended
        // At most two under way; ending one (DELETE) makes room.
        let one = try #require(await h.createUpload(10, as: ada).path)
        #expect(await h.createUpload(10, as: ada).status == 201)
        #expect(await h.createUpload(10, as: ada).status == 400)
        #expect(await h.tus("DELETE", one, as: ada).status == 204)
        #expect(await h.createUpload(10, as: ada).status == 201)
        let options = await h.http("OPTIONS", "/files/uploads")
        #expect(options.header("Tus-Version") == "1.0.0" && options.header("Tus-Extension") == "creation,termination,expiration")
    }

    @Test func anExpiredUploadIsEndedAndItsBytesFreed() async throws {
        let h = try await Harness.files { $0.uploadLifetime = .seconds(60) }
        let ada = try await h.user("ada@example.com")
        let path = try #require(await h.createUpload(100, as: ada).path)
        let id = String(path.split(separator: "/").last ?? "")
        _ = await h.tus("PATCH", path, as: ada, headers: ["Content-Type": "application/offset+octet-stream", "Upload-Offset": "0"], body: Array(repeating: 7, count: 50))
        let blobs = FileBlobs(directory: h.files.options.directory)
        #expect(try await blobs.readPartial(upload: id)?.count == 50)
        let sweeper = UploadSweeper(uploads: UploadsRepository(database: h.database), blobs: blobs, logger: h.context.logger)
        #expect(try await sweeper.sweep(now: WallTime.now().nanosecondsSinceEpoch) == 0)
        #expect(try await sweeper.sweep(now: WallTime.now().nanosecondsSinceEpoch + 61_000_000_000) == 1)
        #expect(try await blobs.readPartial(upload: id) == nil)
        #expect(await h.tus("HEAD", path, as: ada).status == 404)
    }

    /// Thousands of uploads begun and left: the sweep ends them all, in batches, and frees
    /// their bytes on disk and the quota they held.
    @Test func thousandsOfAbandonedUploadsAreEndedAndFreed() async throws {
        let h = try await Harness.files {
            $0.uploadLifetime = .seconds(60)
            $0.pendingUploads = 3_000
            $0.quotaBytes = 2_100 * 1_000
        }
        let ada = try await h.user("ada@example.com")
        let abandoned = 2_100
        for _ in 0..<abandoned {
            let upload = try await h.bus.send(FilesInterface.CreateUpload(bytes: 1_000, contentType: "application/pdf"), as: ada.caller)
            _ = try await h.bus.send(FilesInterface.AppendUpload(uploadId: upload.uploadId, offset: 0, data: Base64.encode(Array("%PDF-1.7\n".utf8), padded: true)), as: ada.caller)
        }
        // The quota is held by them: one more byte does not fit.
        await #expect(throws: FilesError.quotaExceeded(quotaBytes: 2_100 * 1_000)) {
            try await h.bus.send(FilesInterface.CreateUpload(bytes: 1, contentType: "application/pdf"), as: ada.caller)
        }
        let incoming = h.files.options.directory + "/.incoming"
        #expect(FileSystem.usage(under: incoming, limit: 10_000).entries == abandoned)
        let blobs = FileBlobs(directory: h.files.options.directory)
        let sweeper = UploadSweeper(uploads: UploadsRepository(database: h.database), blobs: blobs, logger: h.context.logger)
        #expect(try await sweeper.sweep(now: WallTime.now().nanosecondsSinceEpoch + 61_000_000_000) == abandoned)
        #expect(FileSystem.usage(under: incoming, limit: 10_000).entries == 0)
        // The quota is free again.
        #expect((try? await h.bus.send(FilesInterface.CreateUpload(bytes: 2_100 * 1_000, contentType: "application/pdf"), as: ada.caller)) != nil)
    }

    /// Bytes no row names — a file written but never recorded (a crash between the two), its
    /// thumbnail, a write cut off in .incoming, an upload's partial bytes whose row is gone — are
    /// removed once they are older than the grace; what rows name stays.
    @Test func bytesNoRowNamesAreSweptAfterTheGrace() async throws {
        let h = try await Harness.files { $0.thumbnailSizes = [] }
        let ada = try await h.user("ada@example.com")
        let kept = try #require(await h.upload(Samples.pdf, type: "application/pdf", as: ada).file)
        let pending = try await h.bus.send(FilesInterface.CreateUpload(bytes: 100, contentType: "application/pdf"), as: ada.caller)
        _ = try await h.bus.send(FilesInterface.AppendUpload(uploadId: pending.uploadId, offset: 0, data: Base64.encode(Array("%PDF-1.7\n".utf8), padded: true)), as: ada.caller)
        let blobs = FileBlobs(directory: h.files.options.directory)
        let orphan = "f_OrphanOrphanOrphan0001"
        try await blobs.write(Array("never recorded".utf8), id: orphan)
        try await blobs.write(Array("its thumbnail".utf8), id: orphan + ".t256")
        try await blobs.write(Array("cut".utf8), upload: "u_GoneGoneGoneGoneGone01", at: 0)
        try await blobs.write(Array("half".utf8), upload: "f_CutOffCutOffCutOff0001", at: 0)  // a write that never reached its rename

        let sweeper = BlobSweeper(database: h.database, blobs: blobs, logger: h.context.logger)
        let now = WallTime.now().nanosecondsSinceEpoch
        #expect(try await sweeper.sweep(now: now) == 0, "within the grace nothing goes")
        #expect(try await sweeper.sweep(now: now + 2 * 3600 * 1_000_000_000) == 4)
        #expect(try await blobs.read(id: orphan) == nil)
        #expect(try await blobs.read(id: orphan + ".t256") == nil)
        #expect(try await blobs.readPartial(upload: "u_GoneGoneGoneGoneGone01") == nil)
        // What rows name is untouched: the stored file and the upload under way.
        #expect(try await blobs.read(id: kept.id) == Samples.pdf)
        #expect(try await blobs.readPartial(upload: pending.uploadId) != nil)
        #expect(try await sweeper.sweep(now: now + 2 * 3600 * 1_000_000_000) == 0)
    }

    @Test func datesAreIMFFixdate() {
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_796_556_800 * 1_000_000_000) == "Sun, 06 Dec 2026 11:33:20 GMT")
        #expect(HTTPDate.format(951_782_400 * 1_000_000_000) == "Tue, 29 Feb 2000 00:00:00 GMT")
    }
}
