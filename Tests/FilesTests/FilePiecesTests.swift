// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
@testable import Files
import PluginKit
import TestSupport
import Testing

/// Uploads and downloads in pieces over the bus (appctl's way): the uploads of tus, in base64.
@Suite(.cleansUp) struct FilePiecesTests {
    @Test func aFileGoesUpInPiecesResumesWhereTheStatusSaysAndComesBackInPieces() async throws {
        let h = try await Harness.files()
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let bytes = Samples.pdf + Array(repeating: UInt8(ascii: " "), count: 700_000)
        let created = try await h.bus.send(FilesInterface.CreateUpload(bytes: Int64(bytes.count), name: "../report.pdf", contentType: "application/pdf"), as: ada.caller)
        let piece = 300_000
        func append(_ offset: Int, _ count: Int, as user: TestUser = ada) async throws -> FilesInterface.AppendUpload.Reply {
            let slice = Array(bytes[offset..<min(bytes.count, offset + count)])
            return try await h.bus.send(FilesInterface.AppendUpload(uploadId: created.uploadId, offset: Int64(offset), data: Base64.encode(slice, padded: true)), as: user.caller)
        }
        #expect(try await append(0, piece).offset == Int64(piece))
        // A piece sent again (its answer was lost): refused with where the upload is.
        await #expect(throws: FilesError.offsetMismatch(offset: Int64(piece))) { try await append(0, piece) }
        // Another account sees no such upload.
        await #expect(throws: FilesError.notFound) { try await append(piece, piece, as: bob) }
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.UploadStatus(uploadId: created.uploadId), as: bob.caller) }
        // A piece larger than the bound is refused before it is decoded.
        let tooBig = Base64.encode(Array(repeating: 0, count: FilesInterface.pieceBytes + 3), padded: true)
        await #expect(throws: FilesError.self) {
            try await h.bus.send(FilesInterface.AppendUpload(uploadId: created.uploadId, offset: Int64(piece), data: tooBig), as: ada.caller)
        }
        let status = try await h.bus.send(FilesInterface.UploadStatus(uploadId: created.uploadId), as: ada.caller)
        #expect(status.offset == Int64(piece) && status.bytes == Int64(bytes.count) && status.file == nil)
        var offset = Int(status.offset)
        var last: FilesInterface.AppendUpload.Reply?
        while offset < bytes.count {
            last = try await append(offset, piece)
            offset = Int(last!.offset)
        }
        let file = try #require(last?.file)
        #expect(file.name == "report.pdf" && file.contentType == "application/pdf" && file.bytes == Int64(bytes.count))
        #expect(try await h.bus.send(FilesInterface.UploadStatus(uploadId: created.uploadId), as: ada.caller).file == file)

        // Back in pieces of any size; the same bytes.
        var got: [UInt8] = []
        while got.count < bytes.count {
            let reply = try await h.bus.send(FilesInterface.Download(id: file.id, offset: Int64(got.count), limit: 200_001), as: ada.caller)
            #expect(reply.total == Int64(bytes.count) && reply.offset == Int64(got.count))
            got += try #require(Base64.decode(reply.data))
        }
        #expect(got == bytes)
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.Download(id: file.id), as: bob.caller) }
        await #expect(throws: FilesError.self) { try await h.bus.send(FilesInterface.Download(id: file.id, limit: FilesInterface.pieceBytes + 1), as: ada.caller) }

        // Bytes that are not what they claim end the upload, as POST /files would refuse them.
        let lie = try await h.bus.send(FilesInterface.CreateUpload(bytes: 10, contentType: "image/png"), as: ada.caller)
        await #expect(throws: FilesError.self) {
            try await h.bus.send(FilesInterface.AppendUpload(uploadId: lie.uploadId, offset: 0, data: Base64.encode(Array("0123456789".utf8))), as: ada.caller)
        }
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.UploadStatus(uploadId: lie.uploadId), as: ada.caller) }
    }
}
