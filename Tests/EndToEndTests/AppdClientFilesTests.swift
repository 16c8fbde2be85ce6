// SPDX-License-Identifier: Apache-2.0
import AppdClient
import BusCore
import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport

/// AppdClient's files against the real appd binary: up, down, by a signed URL, refused.
@Suite(.serialized, .timeLimit(.minutes(2))) struct AppdClientFilesTests {
    @Test func aFileGoesUpComesBackAndOpensByASignedURLWithoutAToken() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let base = URL(string: "http://127.0.0.1:\(port)")!
        let appd = AppdClient(baseURL: base)
        _ = try await appd.call(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse battery"))
        let report = Data("%PDF-1.7\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)
        let file = try await appd.upload(report, contentType: "application/pdf", name: "report ü.pdf", idempotencyKey: "c5a1e7f0-upload")
        #expect(file.name == "report ü.pdf" && file.bytes == Int64(report.count) && file.contentType == "application/pdf")
        // The same key again is the same file; the list holds one.
        #expect(try await appd.upload(report, contentType: "application/pdf", name: "report ü.pdf", idempotencyKey: "c5a1e7f0-upload") == file)
        #expect(try await appd.call(FilesInterface.List()).files == [file])
        #expect(try await appd.download(file: file.id) == report)
        // A loader without the token opens it by the signed URL.
        let url = try await appd.signedURL(forFile: file.id, seconds: 60)
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200 && data == report)
        // Typed refusals.
        await #expect(throws: FilesError.self) { _ = try await appd.upload(Data("<html></html>".utf8), contentType: "text/html") }
        await #expect(throws: FilesError.notFound) { _ = try await appd.download(file: "f_AAAAAAAAAAAAAAAAAAAAAA") }
        _ = try await appd.call(FilesInterface.Delete(id: file.id))
        await #expect(throws: FilesError.notFound) { _ = try await appd.download(file: file.id) }
        #expect(await daemon.stop() == 0)
    }
}
