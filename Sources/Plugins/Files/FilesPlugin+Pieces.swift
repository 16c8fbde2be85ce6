// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import PluginKit

extension FilesPlugin {
    /// Uploads and downloads in pieces over the bus (`Files.CreateUpload`, `AppendUpload`,
    /// `UploadStatus`, `Download`): the transport of appctl, which has the socket and no HTTP.
    /// The uploads are those of tus (`ResumableUploads`).
    func registerPieces(_ core: ResumableUploads, on handlers: HandlerSet) {
        let repository = core.transfers.repository, store = core.transfers.store
        @Sendable func pending(_ id: String, _ owner: String) async throws -> PendingUpload {
            guard TusUploads.isUploadID(id), let upload = try await core.upload(id, owner: owner) else { throw FilesError.notFound }
            return upload
        }
        @Sendable func file(_ id: String?, _ owner: String) async throws -> StoredFile? {
            guard let id else { return nil }
            return try await repository.file(id, owner: owner)
        }
        handlers.handle(FilesInterface.CreateUpload.self) { c, e in
            let name = try c.name.map { try FileTransfers.fileName($0, type: c.contentType ?? "") }
            let declared = c.contentType.map(FileTransfers.mediaType).flatMap { $0.isEmpty ? nil : $0 }
            let upload = try await core.create(owner: try user(e), length: c.bytes, name: name, declared: declared)
            return .init(uploadId: upload.id, expiresAt: WallTime(nanosecondsSinceEpoch: upload.expiresNs).rfc3339)
        }
        handlers.handle(FilesInterface.UploadStatus.self) { c, e in
            let owner = try user(e)
            let upload = try await pending(c.uploadId, owner)
            // Complete: its file, made now if a failure stopped that before.
            let made = upload.received == upload.length ? try await core.finish(upload) : nil
            return .init(offset: upload.received, bytes: upload.length, file: try await file(made, owner))
        }
        handlers.handle(FilesInterface.AppendUpload.self) { c, e in
            let owner = try user(e)
            // The text is bounded before it is decoded, the bytes after.
            guard c.data.utf8.count <= (FilesInterface.pieceBytes + 2) / 3 * 4 + 4, let bytes = Base64.decode(c.data), bytes.count <= FilesInterface.pieceBytes else {
                throw FilesError.validation("data", "is base64 of at most \(FilesInterface.pieceBytes) bytes")
            }
            let upload = try await pending(c.uploadId, owner)
            do {
                let (received, made) = try await core.append(bytes, at: c.offset, to: upload)
                return .init(offset: received, file: try await file(made, owner))
            } catch ResumableUploads.Refused.offsetMismatch(let received), ResumableUploads.Refused.busy(let received) {
                throw FilesError.offsetMismatch(offset: received)
            }
        }
        handlers.handle(FilesInterface.Download.self) { c, e in
            let owner = try user(e)
            let offset = c.offset ?? 0, limit = c.limit ?? FilesInterface.pieceBytes
            guard offset >= 0 else { throw FilesError.validation("offset", "is 0 or more") }
            guard (1...FilesInterface.pieceBytes).contains(limit) else { throw FilesError.validation("limit", "is 1 to \(FilesInterface.pieceBytes)") }
            guard let described = try await repository.file(c.id, owner: owner) else { throw FilesError.notFound }
            guard offset <= described.bytes else { throw FilesError.validation("offset", "is past the file's end (\(described.bytes) bytes)") }
            guard let bytes = try await store.read(id: described.id) else { throw FileBlobError("the bytes of \(described.id) are missing from the store") }
            let start = Int(offset), end = min(bytes.count, start + limit)
            return .init(data: Base64.encode(Array(bytes[start..<end]), padded: true), offset: offset, total: Int64(bytes.count))
        }
    }
}
