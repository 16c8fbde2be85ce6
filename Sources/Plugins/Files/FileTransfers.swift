// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP
import Runtime
import Synchronization

/// The bytes over HTTP: `POST /files` stores what the body holds for the signed-in user,
/// `GET`/`HEAD /files/<id>` gives it back to its owner (bearer token) or to whoever holds a
/// signed URL for it, with ranges, validators and the headers that keep a browser from
/// running what it downloads (RFC 9110; docs/files.md).
struct FileTransfers: Sendable {
    let repository: FilesRepository
    /// Finished files' bytes.
    let store: any FileStore
    /// Resumable uploads' bytes so far (always on this machine's disk).
    let blobs: FileBlobs
    let signer: FileURLSigner
    let options: FilesOptions
    let bus: EventBus
    let uploads: UploadsInFlight
    let resumable: UploadsRepository
    let busy: BusyUploads

    func handle(_ request: HTTPServerRequest, _ body: [UInt8]) async -> HTTPResponse {
        let path = request.path
        if path == "/files/uploads" || path.hasPrefix("/files/uploads/") {
            var owner: String?
            if request.method != "OPTIONS" && request.headers["tus-resumable"] == TusUploads.version {
                switch await signedInUser(request) {
                case .success(let user): owner = user
                case .failure(let refusal):
                    var response = refusal.response
                    response.headers.append(("Tus-Resumable", TusUploads.version))
                    return response
                }
            }
            return await TusUploads(core: ResumableUploads(transfers: self, uploads: resumable, busy: busy)).handle(request, body, owner: owner)
        }
        if path == "/files" || path == "/files/" {
            guard request.method == "POST" else { return Self.methodNotAllowed("POST") }
            return await upload(request, body)
        }
        let id = String(path.dropFirst("/files/".count))
        guard Self.isFileID(id) else { return Self.failure(FilesError.notFound) }
        guard request.method == "GET" || request.method == "HEAD" else { return Self.methodNotAllowed("GET, HEAD") }
        return await download(id, request)
    }

    // MARK: Upload

    private func upload(_ request: HTTPServerRequest, _ body: [UInt8]) async -> HTTPResponse {
        let owner: String
        switch await signedInUser(request) {
        case .success(let user): owner = user
        case .failure(let refusal): return refusal.response
        }
        guard uploads.begin(owner, limit: options.uploadsInFlight) else {
            return HTTPResponse(
                status: 429, body: ["error": "io.appd.Bus.RateLimited", "parameters": ["retryAfterSeconds": 1]], headers: [("Retry-After", "1")])
        }
        defer { uploads.end(owner) }
        do {
            let declared = Self.mediaType(request.headers["content-type"] ?? "")
            guard !declared.isEmpty else { throw FilesError.validation("Content-Type", "is required: the file's type, e.g. image/jpeg") }
            let (file, created) = try await store(
                body, declared: declared, name: request.query["name"], idempotencyKey: request.headers["idempotency-key"], owner: owner)
            return HTTPResponse(status: created ? 201 : 200, body: ["file": try JSONValue(encoding: file)], headers: [("Location", "/files/\(file.id)")])
        } catch {
            return Self.failure(error)
        }
    }

    /// Checks the bytes, strips their metadata, writes them, then records them (if the account
    /// has room); a failed record removes the bytes again.
    /// `declared`: the type the client says (nil: none said, the bytes decide).
    func store(_ body: [UInt8], declared given: String?, name: String?, idempotencyKey key: String?, owner: String) async throws -> (StoredFile, Bool) {
        if let key, key.utf8.count > 255 || key.isEmpty { throw FilesError.validation("Idempotency-Key", "needs 1 to 255 bytes") }
        // A retry of a stored upload: its file, without checking and storing the bytes again.
        if let key, let earlier = try await repository.file(owner: owner, idempotencyKey: key) { return (earlier, false) }
        guard Int64(body.count) <= options.maxFileBytes else { throw FilesError.tooLarge(limitBytes: options.maxFileBytes) }
        guard !body.isEmpty else { throw FilesError.validation("file", "is empty: send the file's bytes as the request body") }
        let sniffed = ContentSniffer.sniff(body)
        let declared = given ?? sniffed?.contentType ?? "application/octet-stream"
        guard let sniffed else {
            throw FilesError.typeRefused(declared: declared, detected: nil, reason: "the bytes are not of a type appd recognises (JPEG, PNG, GIF, WebP, HEIC, PDF)")
        }
        guard sniffed.contentType == declared || (declared == "image/heif" && sniffed.contentType == "image/heic") else {
            throw FilesError.typeRefused(
                declared: declared, detected: sniffed.contentType, reason: "the bytes are \(sniffed.contentType), not the \(declared) declared")
        }
        guard options.allowedTypes.contains(sniffed.contentType) else {
            throw FilesError.typeRefused(declared: declared, detected: sniffed.contentType, reason: "\(sniffed.contentType) files are not accepted here")
        }
        if sniffed.isImage {
            guard let width = sniffed.width, let height = sniffed.height, width > 0, height > 0 else {
                throw FilesError.validation("file", "is an image whose size cannot be read from its header")
            }
            guard width * height <= options.maxPixels else {
                throw FilesError.validation("file", "is a \(width)×\(height) image; at most \(options.maxPixels) pixels are accepted")
            }
        }
        var bytes = body
        if !options.keepMetadata {
            guard let stripped = ImageMetadata.stripped(body, contentType: sniffed.contentType) else {
                throw FilesError.validation("file", "is a damaged \(sniffed.contentType): its segments run past its end")
            }
            bytes = stripped
        }
        let name = try Self.fileName(name, type: sniffed.contentType)
        let id = "f_" + Base64.encode(try Digest.randomBytes(16), urlSafe: true).filter { $0 != "=" }
        let thumbnails = try await thumbnails(of: bytes, sniffed)
        let file = StoredFile(
            id: id, name: name, contentType: sniffed.contentType, bytes: Int64(bytes.count), sha256: Digest.hex(Digest.sha256(bytes)),
            width: sniffed.width, height: sniffed.height, thumbnails: thumbnails.map(\.side), createdAt: "")
        try await store.write(bytes, id: id)
        let names = FilesRepository.storedNames(file)
        let now = WallTime.now()
        do {
            for (side, jpeg) in thumbnails { try await store.write(jpeg, id: FilesRepository.thumbnailName(id, side)) }
            var recorded = file
            recorded.createdAt = now.rfc3339
            let (stored, created) = try await repository.insert(recorded, owner: owner, createdNs: now.nanosecondsSinceEpoch, idempotencyKey: key, quota: options.quotaBytes)
            if !created { try? await store.remove(names) }
            return (stored, created)
        } catch {
            try? await store.remove(names)
            throw error
        }
    }

    /// The thumbnails of an image, for each configured side it is larger than (with its
    /// orientation, as the image's). An image that does not decode is refused: its header
    /// promised an image. One with more pixels than thumbnails are made of gets none.
    private func thumbnails(of bytes: [UInt8], _ sniffed: SniffedContent) async throws -> [(side: Int, jpeg: [UInt8])] {
        guard Thumbnailer.makes(sniffed.contentType), let width = sniffed.width, let height = sniffed.height,
            width * height <= options.thumbnailMaxSourcePixels
        else { return [] }
        let orientation = sniffed.contentType == "image/jpeg" ? ImageMetadata.orientation(ofJPEG: bytes) : nil
        var made: [(side: Int, jpeg: [UInt8])] = []
        for side in options.thumbnailSizes.sorted() where max(width, height) > side {
            do {
                let jpeg = try await Thumbnailer.make(
                    bytes, contentType: sniffed.contentType, maxSide: side, maxSourcePixels: options.thumbnailMaxSourcePixels, timeout: .seconds(20))
                made.append((side, orientation.map { ImageMetadata.withOrientation(jpeg, $0) } ?? jpeg))
            } catch let error as ThumbnailError {
                throw FilesError.validation("file", "does not decode as the \(sniffed.contentType) its header says it is (\(error))")
            }
        }
        return made
    }

    // MARK: Download

    private func download(_ id: String, _ request: HTTPServerRequest) async -> HTTPResponse {
        let file: StoredFile?
        var cacheControl = "private, no-cache"
        do {
            if let sig = request.query["sig"] {
                guard let expires = request.query["expires"].flatMap({ Int64($0) }),
                    signer.verify(id: id, expires: expires, sig: sig, now: WallTime.now().nanosecondsSinceEpoch / 1_000_000_000)
                else {
                    return HTTPResponse(
                        status: 403,
                        body: [
                            "error": "io.appd.Files.SignatureInvalid", "parameters": ["reason": "the URL is not signed for this file, or it expired; ask SignURL for a new one"],
                        ])
                }
                cacheControl = "private, max-age=\(max(0, expires - WallTime.now().nanosecondsSinceEpoch / 1_000_000_000))"
                file = try await repository.file(id)
            } else {
                switch await signedInUser(request) {
                case .success(let owner): file = try await repository.file(id, owner: owner)
                case .failure(let refusal): return refusal.response
                }
            }
        } catch {
            return Self.failure(error)
        }
        guard var file else { return Self.failure(FilesError.notFound) }
        var blobName = file.id, etag = "\"\(file.sha256)\""
        if let asked = request.query["thumbnail"] {
            // One of the file's thumbnails, by its side.
            guard let side = Int(asked), file.thumbnails.contains(side) else {
                return Self.failure(FilesError.validation("thumbnail", "is one of the sides this file has: \(file.thumbnails.map(String.init).joined(separator: ", "))"))
            }
            blobName = FilesRepository.thumbnailName(file.id, side)
            etag = "\"\(file.sha256)-t\(side)\""
            file.contentType = "image/jpeg"
        }
        var headers: [(name: String, value: String)] = [
            ("Content-Type", file.contentType), ("ETag", etag), ("Cache-Control", cacheControl), ("Accept-Ranges", "bytes"),
            ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "default-src 'none'; sandbox"),
            ("Content-Disposition", Self.disposition(file)),
        ]
        if let match = request.headers["if-none-match"], Self.matches(match, etag) { return HTTPResponse(status: 304, headers: headers) }
        let bytes: [UInt8]
        do {
            guard let read = try await store.read(id: blobName) else {
                return HTTPResponse(
                    status: 503, body: ["error": "io.appd.Files.Unavailable", "parameters": ["reason": "the file's bytes are missing from storage; tell the operator"]])
            }
            bytes = read
        } catch {
            return HTTPResponse(
                status: 503, body: ["error": "io.appd.Files.Unavailable", "parameters": ["reason": "the file cannot be read now; try again"]], headers: [("Retry-After", "1")])
        }
        // A Range applies unless If-Range names another version (RFC 9110 §13.1.5).
        if let range = request.headers["range"], request.headers["if-range"].map({ $0 == etag }) ?? true {
            switch ByteRange.parse(range, length: bytes.count) {
            case .whole: break
            case .unsatisfiable:
                headers.append(("Content-Range", "bytes */\(bytes.count)"))
                return HTTPResponse(status: 416, headers: headers)
            case .part(let lower, let upper):
                headers.append(("Content-Range", "bytes \(lower)-\(upper)/\(bytes.count)"))
                return HTTPResponse(status: 206, headers: headers, body: Array(bytes[lower...upper]))
            }
        }
        return HTTPResponse(status: 200, headers: headers, body: bytes)
    }

    // MARK: Who is asking

    struct Refusal: Error {
        let response: HTTPResponse
    }

    /// The bearer token's user, through the bus (the session and account-limit gates decide,
    /// as for any call); fails closed when it cannot tell.
    private func signedInUser(_ request: HTTPServerRequest) async -> Result<String, Refusal> {
        guard let authorization = request.headers["authorization"], authorization.lowercased().hasPrefix("bearer "),
            case let token = String(authorization.dropFirst(7)).trimmingWhitespace(), !token.isEmpty
        else { return .failure(Refusal(response: Self.unauthenticated())) }
        do {
            let reply = try await bus.send(AuthInterface.WhoAmI(), as: Caller(sessionToken: SessionToken(token), remoteAddress: request.peerAddress))
            return .success(reply.user.id)
        } catch {
            return .failure(Refusal(response: Self.failure(error)))
        }
    }

    // MARK: Answers

    /// The HTTP answer to an error: its wire name and parameters, with the status its kind says.
    static func failure(_ error: any Error) -> HTTPResponse {
        let status: Int
        var headers: [(name: String, value: String)] = []
        switch error {
        case let error as FilesError:
            switch error {
            case .notFound: status = 404
            case .quotaExceeded: status = 403
            case .tooLarge: status = 413
            case .typeRefused: status = 415
            case .validationFailed: status = 400
            case .inUse, .offsetMismatch: status = 409
            }
        case let error as AuthError:
            switch error {
            case .unauthenticated, .sessionExpired:
                status = 401
                headers.append(("WWW-Authenticate", "Bearer"))
            default: status = 403
            }
        case let error as RateLimited:
            status = 429
            headers.append(("Retry-After", "\(max(1, error.retryAfterSeconds))"))
        default:
            return HTTPResponse(
                status: 503, body: ["error": "io.appd.Files.Unavailable", "parameters": ["reason": "the file could not be handled now; try again"]],
                headers: [("Retry-After", "1")])
        }
        guard let wire = error as? any WireError else { return HTTPResponse(status: status, body: ["error": "io.appd.Files.Failed"], headers: headers) }
        return HTTPResponse(status: status, body: ["error": .string(wire.wireName), "parameters": .object(wire.wireParameters)], headers: headers)
    }

    static func unauthenticated() -> HTTPResponse {
        // Auth's error as its IDL declares it (no parameters): a bearer token, or a URL from SignURL.
        HTTPResponse(status: 401, body: ["error": .string(AuthError.unauthenticated.wireName), "parameters": [:]], headers: [("WWW-Authenticate", "Bearer")])
    }

    static func methodNotAllowed(_ allow: String) -> HTTPResponse {
        HTTPResponse(status: 405, body: ["error": "MethodNotAllowed", "parameters": ["allow": .string(allow)]], headers: [("Allow", allow)])
    }

    /// `f_` and 22 base64url characters: what `store` makes, and so nothing that could name a
    /// path outside the directory.
    static func isFileID(_ id: String) -> Bool { isID(id, prefix: "f_") }

    /// `prefix` and 22 base64url characters (16 random bytes): the ids files and uploads get.
    static func isID(_ id: String, prefix: String) -> Bool {
        id.utf8.count == prefix.utf8.count + 22 && id.hasPrefix(prefix)
            && id.utf8.dropFirst(prefix.utf8.count).allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F
            }
    }

    /// `image/jpeg` of `Image/JPEG; charset=x` (and `image/jpg` as `image/jpeg`).
    static func mediaType(_ header: String) -> String {
        let type = String(header.prefix { $0 != ";" }).trimmingWhitespace().lowercased()
        return type == "image/jpg" || type == "image/pjpeg" ? "image/jpeg" : type
    }

    /// The name to show: the client's, without paths, control characters or more than 255
    /// bytes; `file` and the type's extension when none is given.
    static func fileName(_ given: String?, type: String) throws(FilesError) -> String {
        let base = (given ?? "").split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let cleaned = String(String.UnicodeScalarView(base.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) }))
            .trimmingWhitespace()
        guard cleaned.utf8.count <= 255 else { throw .validation("name", "is over 255 bytes") }
        if !cleaned.isEmpty && cleaned != "." && cleaned != ".." { return cleaned }
        let ext = ["image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp", "image/heic": "heic", "application/pdf": "pdf"][type] ?? "bin"
        return "file.\(ext)"
    }

    /// `inline` for images (so an `<img>` or AsyncImage shows them), `attachment` for anything
    /// else; the name as an ASCII fallback and as RFC 8187 UTF-8.
    static func disposition(_ file: StoredFile) -> String {
        let kind = file.contentType.hasPrefix("image/") ? "inline" : "attachment"
        let ascii = String(file.name.unicodeScalars.map { $0.isASCII && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        return "\(kind); filename=\"\(ascii)\"; filename*=UTF-8''\(S3Signer.encode(file.name, slash: true))"
    }

    /// Whether an If-None-Match list names `etag` (weak comparison, `*` matches any).
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { item in
            let tag = item.trimmingWhitespace()
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }
}

/// How many uploads each account has in flight on this instance.
final class UploadsInFlight: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    func begin(_ owner: String, limit: Int) -> Bool {
        counts.withLock { counts in
            guard counts[owner, default: 0] < limit else { return false }
            counts[owner, default: 0] += 1
            return true
        }
    }

    func end(_ owner: String) {
        counts.withLock { counts in
            let left = counts[owner, default: 1] - 1
            counts[owner] = left > 0 ? left : nil
        }
    }
}
