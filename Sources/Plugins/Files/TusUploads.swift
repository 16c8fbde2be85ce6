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
    let core: ResumableUploads
    var transfers: FileTransfers { core.transfers }

    static let version = "1.0.0"
    static let extensions = "creation,termination,expiration"

    func handle(_ request: HTTPServerRequest, _ body: [UInt8], owner: String?) async -> HTTPResponse {
        if request.method == "OPTIONS" {
            return HTTPResponse(
                status: 204,
                headers: [
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
        let upload: PendingUpload
        do {
            guard let found = try await core.upload(id, owner: owner) else { return answer(FileTransfers.failure(FilesError.notFound)) }
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
                try await core.delete(upload)
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
        guard length > 0 else { return answer(FileTransfers.failure(FilesError.validation("Upload-Length", "is 0: there is nothing to store"))) }
        let metadata: [String: String]
        switch Self.metadata(request.headers["upload-metadata"]) {
        case .success(let pairs): metadata = pairs
        case .failure(let problem): return answer(FileTransfers.failure(problem))
        }
        let declared = (metadata["filetype"] ?? metadata["type"] ?? metadata["contentType"]).map(FileTransfers.mediaType).flatMap { $0.isEmpty ? nil : $0 }
        do {
            let upload = try await core.create(owner: owner, length: length, name: metadata["filename"] ?? metadata["name"], declared: declared)
            return answer(HTTPResponse(status: 201, headers: [("Location", "/files/uploads/\(upload.id)"), ("Upload-Expires", HTTPDate.format(upload.expiresNs))]))
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
            do {
                headers.append(("Appd-File", "/files/\(try await core.finish(upload))"))
            } catch {
                return answer(FileTransfers.failure(error))
            }
        }
        return answer(HTTPResponse(status: 200, headers: headers))
    }

    /// `PATCH` with `Upload-Offset` and `Content-Type: application/offset+octet-stream`.
    private func append(_ request: HTTPServerRequest, _ body: [UInt8], to upload: PendingUpload) async -> HTTPResponse {
        guard FileTransfers.mediaType(request.headers["content-type"] ?? "") == "application/offset+octet-stream" else {
            return answer(
                HTTPResponse(status: 415, body: ["error": "io.appd.Files.TusContentType", "parameters": ["reason": "PATCH takes Content-Type: application/offset+octet-stream"]]))
        }
        guard let offset = request.headers["upload-offset"].flatMap({ Int64($0) }), offset >= 0 else {
            return answer(FileTransfers.failure(FilesError.validation("Upload-Offset", "is required: where these bytes start (HEAD says how much arrived)")))
        }
        do {
            let (received, file) = try await core.append(body, at: offset, to: upload)
            var headers: [(name: String, value: String)] = [("Upload-Offset", "\(received)"), ("Upload-Expires", HTTPDate.format(upload.expiresNs))]
            if let file { headers.append(("Appd-File", "/files/\(file)")) }
            return answer(HTTPResponse(status: 204, headers: headers))
        } catch ResumableUploads.Refused.offsetMismatch(let received) {
            return answer(
                HTTPResponse(
                    status: 409, body: ["error": "io.appd.Files.OffsetMismatch", "parameters": ["offset": .int(received)]],
                    headers: [("Upload-Offset", "\(received)")]))
        } catch ResumableUploads.Refused.busy {
            return answer(
                HTTPResponse(status: 409, body: ["error": "io.appd.Files.UploadBusy", "parameters": ["reason": "another request is writing to this upload; HEAD, then go on"]]))
        } catch {
            return answer(FileTransfers.failure(error))
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
            guard let key = parts.first, parts.count <= 2, key.utf8.count <= 64 else {
                return .failure(.validation("Upload-Metadata", "is key base64value pairs, separated by commas"))
            }
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
