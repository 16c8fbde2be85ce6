// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP
import Runtime
import Synchronization

/// Resumable uploads with the tus 1.0 protocol (core, creation, termination, expiration) at
/// `/files/uploads`: a client creates an upload with its length, sends the bytes in `PATCH`
/// requests of any size up to `maxFileBytes`, and after a dropped connection asks `HEAD` how
/// much arrived and goes on from there. The last byte makes it a file, checked and stored as
/// a single upload is (`FileTransfers.store`); `Appd-File` names it.
struct TusUploads: Sendable {
    let transfers: FileTransfers
    let uploads: UploadsRepository
    /// The uploads a request is writing to right now (a second one at once is refused).
    let busy: BusyUploads

    static let version = "1.0.0"
    static let extensions = "creation,termination,expiration"

    func handle(_ request: HTTPServerRequest, _ body: [UInt8], owner: String?) async -> HTTPResponse {
        if request.method == "OPTIONS" {
            return HTTPResponse(status: 204, headers: [
                ("Tus-Resumable", Self.version), ("Tus-Version", Self.version), ("Tus-Extension", Self.extensions),
                ("Tus-Max-Size", "\(transfers.options.maxFileBytes)"),
            ])
        }
        guard request.headers["tus-resumable"] == Self.version else {
            return answer(412, ["error": "io.appd.Files.TusVersion", "parameters": ["reason": "send Tus-Resumable: 1.0.0"]], extra: [("Tus-Version", Self.version)])
        }
        guard let owner else { return answer(FileTransfers.unauthenticated()) }
        let rest = request.path.dropFirst("/files/uploads".count)
        if rest.isEmpty || rest == "/" {
            guard request.method == "POST" else { return answer(FileTransfers.methodNotAllowed("POST, OPTIONS")) }
            return await create(request, body, owner: owner)
        }
        let id = String(rest.dropFirst())
        guard Self.isUploadID(id) else { return answer(FileTransfers.failure(FilesError.notFound)) }
        let now = WallTime.now().nanosecondsSinceEpoch
        let upload: PendingUpload
        do {
            guard let found = try await uploads.upload(id, owner: owner, now: now) else { return answer(FileTransfers.failure(FilesError.notFound)) }
            upload = found
        } catch {
            return answer(FileTransfers.failure(error))
        }
        switch request.method {
        case "HEAD", "GET":
            return await status(upload)
        case "PATCH":
            return await append(request, body, to: upload)
        case "DELETE":
            do {
                try await uploads.delete(id)
                try? await transfers.blobs.removePartials([id])
                return answer(HTTPResponse(status: 204))
            } catch {
                return answer(FileTransfers.failure(error))
            }
        default:
            return answer(FileTransfers.methodNotAllowed("HEAD, PATCH, DELETE"))
        }
    }

    /// `POST /files/uploads` with `Upload-Length` and, optionally, `Upload-Metadata`
    /// (`filename`, `filetype`).
    private func create(_ request: HTTPServerRequest, _ body: [UInt8], owner: String) async -> HTTPResponse {
        guard body.isEmpty else {
            return answer(FileTransfers.failure(FilesError.validation("body", "is sent with PATCH; creation takes none (creation-with-upload is not offered)")))
        }
        guard let text = request.headers["upload-length"], let length = Int64(text), length >= 0, text.utf8.count <= 19 else {
            return answer(FileTransfers.failure(FilesError.validation("Upload-Length", "is required: the file's size in bytes (Upload-Defer-Length is not offered)")))
        }
        guard length <= transfers.options.maxFileBytes else { return answer(FileTransfers.failure(FilesError.tooLarge(limitBytes: transfers.options.maxFileBytes))) }
        guard length > 0 else { return answer(FileTransfers.failure(FilesError.validation("Upload-Length", "is 0: there is nothing to store"))) }
        let metadata: [String: String]
        switch Self.metadata(request.headers["upload-metadata"]) {
        case .success(let pairs): metadata = pairs
        case .failure(let problem): return answer(FileTransfers.failure(problem))
        }
        let declared = (metadata["filetype"] ?? metadata["type"] ?? metadata["contentType"]).map(FileTransfers.mediaType).flatMap { $0.isEmpty ? nil : $0 }
        let name = metadata["filename"] ?? metadata["name"]
        do {
            let id = "u_" + Base64.encode(try Digest.randomBytes(16), urlSafe: true).filter { $0 != "=" }
            let now = WallTime.now().nanosecondsSinceEpoch
            let lifetime = transfers.options.uploadLifetime.components
            let expires = now + lifetime.seconds * 1_000_000_000 + lifetime.attoseconds / 1_000_000_000
            try await uploads.create(
                PendingUpload(id: id, owner: owner, length: length, received: 0, name: name, contentType: declared, expiresNs: expires),
                createdNs: now, quota: transfers.options.quotaBytes, pending: transfers.options.pendingUploads)
            return answer(HTTPResponse(status: 201, headers: [("Location", "/files/uploads/\(id)"), ("Upload-Expires", HTTPDate.format(expires))]))
        } catch {
            return answer(FileTransfers.failure(error))
        }
    }

    /// `HEAD`: how much arrived; once complete, which file it became.
    private func status(_ upload: PendingUpload) async -> HTTPResponse {
        var headers: [(name: String, value: String)] = [
            ("Upload-Offset", "\(upload.received)"), ("Upload-Length", "\(upload.length)"), ("Cache-Control", "no-store"),
            ("Upload-Expires", HTTPDate.format(upload.expiresNs)),
        ]
        if upload.received == upload.length {
            // Complete: its file, made now if a failure stopped that before.
            switch await finish(upload) {
            case .success(let file): headers.append(("Appd-File", "/files/\(file)"))
            case .failure(let refusal): return answer(refusal.response)
            }
        }
        return answer(HTTPResponse(status: 200, headers: headers))
    }

    /// `PATCH` with `Upload-Offset` and `Content-Type: application/offset+octet-stream`.
    private func append(_ request: HTTPServerRequest, _ body: [UInt8], to upload: PendingUpload) async -> HTTPResponse {
        guard FileTransfers.mediaType(request.headers["content-type"] ?? "") == "application/offset+octet-stream" else {
            return answer(HTTPResponse(status: 415, body: ["error": "io.appd.Files.TusContentType", "parameters": ["reason": "PATCH takes Content-Type: application/offset+octet-stream"]]))
        }
        guard let offset = request.headers["upload-offset"].flatMap({ Int64($0) }), offset >= 0 else {
            return answer(FileTransfers.failure(FilesError.validation("Upload-Offset", "is required: where these bytes start (HEAD says how much arrived)")))
        }
        guard offset == upload.received, upload.fileID == nil else {
            return answer(HTTPResponse(status: 409, body: ["error": "io.appd.Files.OffsetMismatch", "parameters": ["offset": .int(upload.received)]],
                                       headers: [("Upload-Offset", "\(upload.received)")]))
        }
        guard offset + Int64(body.count) <= upload.length else {
            return answer(FileTransfers.failure(FilesError.validation("body", "runs past Upload-Length (\(upload.length) bytes)")))
        }
        guard busy.begin(upload.id) else {
            return answer(HTTPResponse(status: 409, body: ["error": "io.appd.Files.UploadBusy", "parameters": ["reason": "another request is writing to this upload; HEAD, then go on"]]))
        }
        defer { busy.end(upload.id) }
        do {
            if !body.isEmpty {
                try await transfers.blobs.write(body, upload: upload.id, at: offset)
                guard try await uploads.advance(upload.id, from: offset, to: offset + Int64(body.count)) else {
                    return answer(HTTPResponse(status: 409, body: ["error": "io.appd.Files.OffsetMismatch", "parameters": ["reason": "the upload moved meanwhile; HEAD, then go on"]]))
                }
            }
        } catch {
            return answer(FileTransfers.failure(error))
        }
        let received = offset + Int64(body.count)
        var headers: [(name: String, value: String)] = [("Upload-Offset", "\(received)"), ("Upload-Expires", HTTPDate.format(upload.expiresNs))]
        if received == upload.length {
            var done = upload
            done.received = received
            switch await finish(done) {
            case .success(let file): headers.append(("Appd-File", "/files/\(file)"))
            case .failure(let refusal): return answer(refusal.response)
            }
        }
        return answer(HTTPResponse(status: 204, headers: headers))
    }

    struct Refusal: Error { let response: HTTPResponse }

    /// The complete upload as a file: checked and stored as a single upload is, keyed by the
    /// upload so that doing it twice (a retry after a failure in between) stores it once. Bytes
    /// that are not an acceptable file end the upload.
    private func finish(_ upload: PendingUpload) async -> Result<String, Refusal> {
        if let file = upload.fileID { return .success(file) }
        do {
            guard let bytes = try await transfers.blobs.readPartial(upload: upload.id), Int64(bytes.count) == upload.length else {
                return .failure(Refusal(response: FileTransfers.failure(FileBlobError("the upload's bytes are missing"))))
            }
            let (file, _) = try await transfers.store(bytes, declared: upload.contentType, name: upload.name, idempotencyKey: "tus:" + upload.id, owner: upload.owner)
            try await uploads.completed(upload.id, file: file.id)
            try? await transfers.blobs.removePartials([upload.id])
            return .success(file.id)
        } catch let error as FilesError {
            // Not a file appd keeps (its type, its size, the quota): the upload ends with it.
            try? await uploads.delete(upload.id)
            try? await transfers.blobs.removePartials([upload.id])
            return .failure(Refusal(response: FileTransfers.failure(error)))
        } catch {
            return .failure(Refusal(response: FileTransfers.failure(error)))
        }
    }

    private func answer(_ status: Int, _ body: JSONValue, extra: [(name: String, value: String)] = []) -> HTTPResponse {
        answer(HTTPResponse(status: status, body: body, headers: extra))
    }

    /// Every tus response says the protocol's version.
    private func answer(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.append(("Tus-Resumable", Self.version))
        return response
    }

    static func isUploadID(_ id: String) -> Bool { FileTransfers.isID(id, prefix: "u_") }

    /// `Upload-Metadata`: comma-separated `key base64value` pairs (a key alone has an empty
    /// value); each value at most 1 KiB decoded.
    static func metadata(_ header: String?) -> Result<[String: String], FilesError> {
        guard let header, !header.trimmingWhitespace().isEmpty else { return .success([:]) }
        var pairs: [String: String] = [:]
        for item in header.split(separator: ",") {
            let parts = item.trimmingWhitespace().split(separator: " ", omittingEmptySubsequences: true)
            guard let key = parts.first, parts.count <= 2, key.utf8.count <= 64 else { return .failure(.validation("Upload-Metadata", "is key base64value pairs, separated by commas")) }
            if parts.count == 2 {
                guard let bytes = Base64.decode(String(parts[1])), bytes.count <= 1024, let value = String(validating: bytes, as: UTF8.self) else {
                    return .failure(.validation("Upload-Metadata", "\(key)'s value is not base64 of at most 1 KiB of UTF-8"))
                }
                pairs[String(key)] = value
            } else {
                pairs[String(key)] = ""
            }
        }
        return .success(pairs)
    }
}

/// The uploads being written to on this instance.
final class BusyUploads: Sendable {
    private let ids = Mutex<Set<String>>([])
    func begin(_ id: String) -> Bool { ids.withLock { $0.insert(id).inserted } }
    func end(_ id: String) { _ = ids.withLock { $0.remove(id) } }
}

/// IMF-fixdate (RFC 9110 §5.6.7), e.g. `Sun, 06 Dec 2026 10:00:00 GMT`.
enum HTTPDate {
    static func format(_ nanoseconds: Int64) -> String {
        let seconds = nanoseconds / 1_000_000_000
        let days = Int(seconds / 86_400), rest = Int(seconds % 86_400)
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(day)) \(months[month - 1]) \(year) \(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60)) GMT"
    }
}
