// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Contracts
@testable import Files
import HTTP
import PluginKit
import Storage
import TestSupport
import Testing

@Suite(.cleansUp) struct FilesPluginTests {
    @Test func anUploadIsCheckedStrippedStoredAndGivenBackToItsOwnerOnly() async throws {
        // Samples.jpeg is headers around no real scan: nothing to make thumbnails of.
        let h = try await Harness.files { $0.thumbnailSizes = [] }
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let photo = Samples.jpeg(width: 640, height: 480)
        let up = await h.upload(photo, type: "image/jpeg", as: ada, name: "..%2Fholiday%0A.jpg")
        #expect(up.status == 201, "\(String(describing: up.body))")
        let file = try #require(up.file)
        #expect(file.contentType == "image/jpeg" && file.width == 640 && file.height == 480 && file.name == "holiday.jpg")
        #expect(file.bytes < Int64(photo.count))  // the metadata went

        let got = await h.http("GET", "/files/\(file.id)", token: ada.accessToken)
        #expect(got.status == 200 && Int64(got.body.count) == file.bytes)
        #expect(got.header("X-Content-Type-Options") == "nosniff" && got.header("ETag") == "\"\(file.sha256)\"")
        #expect(got.header("Content-Disposition")?.hasPrefix("inline; filename=\"holiday.jpg\"") == true)
        #expect(String(decoding: got.body, as: UTF8.self).contains("GPS") == false)
        // Another account, no token, a made-up id: the same "no such file" or a sign-in.
        #expect(await h.http("GET", "/files/\(file.id)", token: bob.accessToken).status == 404)
        #expect(await h.http("GET", "/files/\(file.id)").status == 401)
        #expect(await h.http("GET", "/files/f_AAAAAAAAAAAAAAAAAAAAAA", token: ada.accessToken).status == 404)
        #expect(await h.http("GET", "/files/../../etc/passwd", token: ada.accessToken).status == 404)
        // The bus side: listed, described, counted for its owner; nothing for bob.
        #expect(try await h.bus.send(FilesInterface.List(), as: ada.caller).files == [file])
        #expect(try await h.bus.send(FilesInterface.List(), as: bob.caller).files.isEmpty)
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.Get(id: file.id), as: bob.caller) }
        #expect(try await h.bus.send(FilesInterface.Usage(), as: ada.caller) == .init(files: 1, bytes: file.bytes, quotaBytes: 100 << 20))
        // The upload is logged for the owner.
        let events = try await h.loggedEvents(limit: 100).filter { $0.topic == FileUploaded.topic }
        #expect(events.count == 1 && events.first?.owner == ada.userId)
    }

    @Test func rangesAndValidatorsFollowRFC9110() async throws {
        let h = try await Harness.files()
        let ada = try await h.user("ada@example.com")
        let file = try #require(await h.upload(Samples.pdf, type: "application/pdf", as: ada, name: "report.pdf").file)
        let whole = await h.http("GET", "/files/\(file.id)", token: ada.accessToken).body
        #expect(whole == Samples.pdf)
        let part = await h.http("GET", "/files/\(file.id)", token: ada.accessToken, headers: ["Range": "bytes=0-4"])
        #expect(part.status == 206 && part.body == Array("%PDF-".utf8) && part.header("Content-Range") == "bytes 0-4/\(whole.count)")
        let tail = await h.http("GET", "/files/\(file.id)", token: ada.accessToken, headers: ["Range": "bytes=-6"])
        #expect(tail.status == 206 && tail.body == Array("%%EOF\n".utf8))
        let past = await h.http("GET", "/files/\(file.id)", token: ada.accessToken, headers: ["Range": "bytes=9999-"])
        #expect(past.status == 416 && past.header("Content-Range") == "bytes */\(whole.count)")
        // If-Range with another version: the whole file.
        #expect(await h.http("GET", "/files/\(file.id)", token: ada.accessToken, headers: ["Range": "bytes=0-4", "If-Range": "\"other\""]).status == 200)
        let etag = try #require(part.header("ETag"))
        let unchanged = await h.http("GET", "/files/\(file.id)", token: ada.accessToken, headers: ["If-None-Match": "\"x\", \(etag)"])
        #expect(unchanged.status == 304 && unchanged.body.isEmpty)
        // Not an image: downloaded as an attachment, never shown inline.
        #expect(part.header("Content-Disposition")?.hasPrefix("attachment; filename=\"report.pdf\"") == true)
    }

    @Test func theBytesMustBeWhatTheyClaimAndWhatTheOperatorAllows() async throws {
        let h = try await Harness.files {
            $0.allowedTypes = ["image/jpeg", "image/png"]; $0.maxPixels = 1_000_000; $0.maxFileBytes = 4096
        }
        let ada = try await h.user("ada@example.com")
        let html = Array("<html><script>alert(1)</script></html>".utf8)
        #expect(await h.upload(html, type: "image/jpeg", as: ada).status == 415)
        let lie = await h.upload(Samples.png(width: 10, height: 10), type: "image/jpeg", as: ada)
        #expect(lie.status == 415 && lie.body?["parameters"]?["detected"] == "image/png")
        #expect(await h.upload(Samples.pdf, type: "application/pdf", as: ada).status == 415)  // not allowed here
        // A decompression bomb is refused from its header.
        let bomb = await h.upload(Samples.png(width: 50_000, height: 50_000), type: "image/png", as: ada)
        #expect(bomb.status == 400 && bomb.body?["error"] == "io.appd.Files.ValidationFailed")
        #expect(await h.upload(Samples.png(width: 10, height: 10), type: "", as: ada).status == 400)
        #expect(await h.upload(Array(repeating: 0xFF, count: 5000), type: "image/jpeg", as: ada).status == 413)
        #expect(await h.http("PUT", "/files", token: ada.accessToken).status == 405)
        #expect(try await h.bus.send(FilesInterface.Usage(), as: ada.caller).files == 0)
    }

    @Test func theQuotaCountsStoredBytesAndAKeyedRetryStoresOnce() async throws {
        let h = try await Harness.files { $0.quotaBytes = 3 * Int64(Samples.pdf.count) }
        let ada = try await h.user("ada@example.com")
        let first = await h.upload(Samples.pdf, type: "application/pdf", as: ada, key: "k1")
        let again = await h.upload(Samples.pdf, type: "application/pdf", as: ada, key: "k1")
        #expect(first.status == 201 && again.status == 200 && first.file?.id == again.file?.id)
        #expect(await h.upload(Samples.pdf, type: "application/pdf", as: ada).status == 201)
        #expect(await h.upload(Samples.pdf, type: "application/pdf", as: ada).status == 201)
        let over = await h.upload(Samples.pdf, type: "application/pdf", as: ada)
        #expect(over.status == 403 && over.body?["error"] == "io.appd.Files.QuotaExceeded")
        // Only the three stored files are on disk: the retry's and the refused one's bytes went.
        #expect(Self.storedFiles(h.files.options.directory) == 3)
        // Deleting one makes room.
        _ = try await h.bus.send(FilesInterface.Delete(id: try #require(first.file?.id)), as: ada.caller)
        #expect(Self.storedFiles(h.files.options.directory) == 2)
        #expect(await h.upload(Samples.pdf, type: "application/pdf", as: ada).status == 201)
    }

    @Test func aSignedURLOpensOneFileUntilItExpires() async throws {
        let h = try await Harness.files()
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let file = try #require(await h.upload(Samples.gif(width: 2, height: 2), type: "image/gif", as: ada).file)
        let other = try #require(await h.upload(Samples.gif(width: 3, height: 3), type: "image/gif", as: ada).file)
        let signed = try await h.bus.send(FilesInterface.SignURL(id: file.id, seconds: 60), as: ada.caller)
        let opened = await h.http("GET", signed.path)
        #expect(opened.status == 200 && opened.body == Samples.gif(width: 2, height: 2))
        #expect(opened.header("Cache-Control")?.hasPrefix("private, max-age=") == true)
        // The same signature for another file, a changed expiry, a forged signature: refused.
        #expect(await h.http("GET", signed.path.replacing(file.id, with: other.id)).status == 403)
        let expires = try #require(signed.path.split(separator: "expires=").last?.split(separator: "&").first.flatMap { Int64($0) })
        #expect(await h.http("GET", signed.path.replacing("expires=\(expires)", with: "expires=\(expires + 3600)")).status == 403)
        #expect(await h.http("GET", "/files/\(file.id)?expires=\(expires)&sig=AAAA").status == 403)
        // One that expired.
        let past = FileURLSigner(key: try h.files.signer.key).path(for: file.id, expires: WallTime.now().nanosecondsSinceEpoch / 1_000_000_000 - 1)
        #expect(await h.http("GET", past).status == 403)
        // Only the owner may sign.
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.SignURL(id: file.id), as: bob.caller) }
        await #expect(throws: FilesError.self) { try await h.bus.send(FilesInterface.SignURL(id: file.id, seconds: 86_401), as: ada.caller) }
    }

    @Test func anAccountsFilesAreErasedWithItAndExportedBeforehand() async throws {
        let h = try await Harness.files()
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let mine = try #require(await h.upload(Samples.pdf, type: "application/pdf", as: ada, name: "cv.pdf").file)
        _ = await h.upload(Samples.pdf, type: "application/pdf", as: bob)
        let export = try #require(try await h.files.exportUserData(ada.userId, h.context))
        guard case .array(let rows)? = export["files"] else { Issue.record("no files in \(export)"); return }
        #expect(rows.count == 1 && rows.first?["id"]?.stringValue == mine.id && rows.first?["name"] == "cv.pdf")
        let services = h.files.services(h.context)
        // Unstructured: the consumer runs beside the test until it ends.
        let tasks = services.map { service in Task { try await service.run() } }
        defer { for task in tasks { task.cancel() } }
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: ada.caller)
        #expect(await eventually { (try? await h.count("SELECT COUNT(*) AS n FROM files WHERE owner = '\(ada.userId)'")) == 0 })
        #expect(await eventually { Self.storedFiles(h.files.options.directory) == 1 })  // bob's
        #expect(try await h.bus.send(FilesInterface.List(), as: bob.caller).files.count == 1)
    }

    /// Stored files under `directory` (not the key, not uploads in progress).
    static func storedFiles(_ directory: String) -> Int {
        var count = 0
        guard let top = opendir(directory) else { return 0 }
        defer { closedir(top) }
        while let entry = readdir(top) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard !name.hasPrefix("."), let inner = opendir(directory + "/" + name) else { continue }
            while let file = readdir(inner) {
                let fileName = withUnsafeBytes(of: file.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if fileName.hasPrefix("f_") { count += 1 }
            }
            closedir(inner)
        }
        return count
    }
}
