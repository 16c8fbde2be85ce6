// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// Resumable uploads without a protocol: made with a length, written in pieces at the offset
/// reached, turned into a file by the last byte. tus at `/files/uploads` (`TusUploads`) and the
/// bus methods appctl uses (`Files.CreateUpload`, `AppendUpload`, `UploadStatus`) are two
/// ways into this one.
struct ResumableUploads: Sendable {
    let transfers: FileTransfers
    let uploads: UploadsRepository
    /// The uploads a request is writing to right now (a second one at once is refused).
    let busy: BusyUploads

    /// Why a piece was not written, with where the upload stands.
    enum Refused: Error, Equatable {
        /// The piece does not start where the upload is (or another request moved it): ask
        /// where it is, and go on from there.
        case offsetMismatch(received: Int64)
        /// Another request is writing to it right now.
        case busy(received: Int64)
    }

    /// A new upload of `length` bytes, within the account's quota and pending uploads.
    func create(owner: String, length: Int64, name: String?, declared: String?) async throws -> PendingUpload {
        let options = transfers.options
        guard length <= options.maxFileBytes else { throw FilesError.tooLarge(limitBytes: options.maxFileBytes) }
        guard length > 0 else { throw FilesError.validation("length", "is 0: there is nothing to store") }
        let id = "u_" + Base64.encode(try Digest.randomBytes(16), urlSafe: true).filter { $0 != "=" }
        let now = WallTime.now().nanosecondsSinceEpoch
        let lifetime = options.uploadLifetime.components
        let expires = now + lifetime.seconds * 1_000_000_000 + lifetime.attoseconds / 1_000_000_000
        let upload = PendingUpload(id: id, owner: owner, length: length, received: 0, name: name, contentType: declared, expiresNs: expires)
        try await uploads.create(upload, createdNs: now, quota: options.quotaBytes, pending: options.pendingUploads)
        return upload
    }

    /// The owner's upload `id` as it stands; nil when there is none (or it expired).
    func upload(_ id: String, owner: String) async throws -> PendingUpload? {
        try await uploads.upload(id, owner: owner, now: WallTime.now().nanosecondsSinceEpoch)
    }

    /// Writes `bytes` at `offset`, which must be where the upload is. Returns where it is now
    /// and, when that is its end, the file it became (`finish`).
    func append(_ bytes: [UInt8], at offset: Int64, to upload: PendingUpload) async throws -> (received: Int64, file: String?) {
        guard offset == upload.received, upload.fileID == nil else { throw Refused.offsetMismatch(received: upload.received) }
        guard offset + Int64(bytes.count) <= upload.length else {
            throw FilesError.validation("body", "runs past the upload's length (\(upload.length) bytes)")
        }
        guard busy.begin(upload.id) else { throw Refused.busy(received: upload.received) }
        defer { busy.end(upload.id) }
        if !bytes.isEmpty {
            try await transfers.blobs.write(bytes, upload: upload.id, at: offset)
            guard try await uploads.advance(upload.id, from: offset, to: offset + Int64(bytes.count)) else {
                throw Refused.offsetMismatch(received: upload.received)
            }
        }
        let received = offset + Int64(bytes.count)
        guard received == upload.length else { return (received, nil) }
        var done = upload
        done.received = received
        return (received, try await finish(done))
    }

    /// The complete upload as a file: checked and stored as a single upload is, keyed by the
    /// upload so that doing it twice (a retry after a failure in between) stores it once. Bytes
    /// that are not an acceptable file end the upload (the `FilesError` says why).
    func finish(_ upload: PendingUpload) async throws -> String {
        if let file = upload.fileID { return file }
        guard let bytes = try await transfers.blobs.readPartial(upload: upload.id), Int64(bytes.count) == upload.length else {
            throw FileBlobError("the upload's bytes are missing")
        }
        do {
            let (file, _) = try await transfers.store(bytes, declared: upload.contentType, name: upload.name, idempotencyKey: "tus:" + upload.id, owner: upload.owner)
            try await uploads.completed(upload.id, file: file.id)
            try? await transfers.blobs.removePartials([upload.id])
            return file.id
        } catch let error as FilesError {
            // Not a file appd keeps (its type, its size, the quota): the upload ends with it.
            try? await uploads.delete(upload.id)
            try? await transfers.blobs.removePartials([upload.id])
            throw error
        }
    }

    /// Ends an upload and frees its bytes.
    func delete(_ upload: PendingUpload) async throws {
        try await uploads.delete(upload.id)
        try? await transfers.blobs.removePartials([upload.id])
    }
}
