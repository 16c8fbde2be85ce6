// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension AppdClient {
    /// Uploads a file on disk resumably (tus 1.0 at `/files/uploads`, docs/files.md): in pieces
    /// of `pieceBytes`, telling `progress` the bytes the server has after each; a dropped
    /// connection or a busy appd is retried (`RetryPolicy`), and an upload cut short for good —
    /// the app killed, the task cancelled, the network gone — goes on where the server says it
    /// stopped when this is called again for the same file (`journal` remembers it; the file's
    /// path, size and modification time identify it). Returns the stored file, checked as
    /// `upload(_:contentType:)` checks it. Errors: `FilesError`, `AuthError`, `AppdClientError`.
    public func upload(
        contentsOf file: URL, contentType: String, name: String? = nil, journal: UploadJournal = .standard, pieceBytes: Int = 1 << 20,
        progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void = { _, _ in }
    ) async throws -> StoredFile {
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        let key = "\(baseURL.absoluteString)|\(file.path)|\(size)|\(Int64(modified * 1000))"
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }

        var path: String
        var offset: Int64
        if let known = journal.entry(key), let status = try await uploadStatus(known) {
            if let made = status.file { return try await finished(made, key, journal) }
            (path, offset) = (known, status.offset)
        } else {
            path = try await createUpload(length: size, name: name ?? file.lastPathComponent, contentType: contentType)
            offset = 0
            journal.set(key, path)
        }
        progress(offset, size)
        while true {
            try Task.checkCancellation()
            try handle.seek(toOffset: UInt64(offset))
            let piece = try handle.read(upToCount: pieceBytes) ?? Data()
            guard !piece.isEmpty || offset == size else { throw AppdClientError.unexpectedReply("\(file.path) is shorter than when the upload began") }
            let at = offset
            let response = try await signedInExchange(repeatable: true) { [url = try fileURL(path: path)] token in
                var request = URLRequest(url: url)
                request.httpMethod = "PATCH"
                request.httpBody = piece
                request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
                request.setValue("application/offset+octet-stream", forHTTPHeaderField: "Content-Type")
                request.setValue(String(at), forHTTPHeaderField: "Upload-Offset")
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                return request
            }
            switch response.status {
            case 204:
                offset = response.headers["upload-offset"].flatMap { Int64($0) } ?? at + Int64(piece.count)
                progress(offset, size)
                if let made = response.headers["appd-file"] { return try await finished(made, key, journal) }
            case 409:
                // A retried piece that had arrived, or another writer: go on from where it is.
                guard let status = try await uploadStatus(path) else { throw WireErrors.error(status: 404, body: nil) }
                if let made = status.file { return try await finished(made, key, journal) }
                offset = status.offset
            default:
                // Refused for good (its type, the quota, the upload gone): it ends here.
                if response.status < 500 && response.status != 429 { journal.set(key, nil) }
                throw WireErrors.error(status: response.status, body: try? JSONParser.parse(response.body))
            }
        }
    }

    /// `POST /files/uploads`: the new upload's path.
    private func createUpload(length: Int64, name: String, contentType: String) async throws -> String {
        let metadata = "filename \(Data(name.utf8).base64EncodedString()),filetype \(Data(contentType.utf8).base64EncodedString())"
        let response = try await signedInExchange(repeatable: false) { [url = try fileURL(path: "/files/uploads")] token in
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
            request.setValue(String(length), forHTTPHeaderField: "Upload-Length")
            request.setValue(metadata, forHTTPHeaderField: "Upload-Metadata")
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            return request
        }
        guard response.status == 201, let location = response.headers["location"] else {
            throw WireErrors.error(status: response.status, body: try? JSONParser.parse(response.body))
        }
        return location
    }

    /// `HEAD` of an upload: where it is and, once complete, its file's path; nil when the
    /// server no longer has it (expired, or another account's).
    private func uploadStatus(_ path: String) async throws -> (offset: Int64, file: String?)? {
        let response = try await signedInExchange(repeatable: true) { [url = try fileURL(path: path)] token in
            var request = URLRequest(url: url)
            request.httpMethod = "HEAD"
            request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            return request
        }
        guard response.status == 200, let offset = response.headers["upload-offset"].flatMap({ Int64($0) }) else {
            if response.status == 404 || response.status == 410 { return nil }
            throw WireErrors.error(status: response.status, body: try? JSONParser.parse(response.body))
        }
        return (offset, response.headers["appd-file"])
    }

    /// The complete upload's file (`Appd-File: /files/<id>`), described; the journal forgets it.
    private func finished(_ filePath: String, _ key: String, _ journal: UploadJournal) async throws -> StoredFile {
        journal.set(key, nil)
        guard let id = filePath.split(separator: "/").last else { throw AppdClientError.unexpectedReply("Appd-File '\(filePath)' names no file") }
        return try await call(FilesInterface.Get(id: String(id))).file
    }
}
