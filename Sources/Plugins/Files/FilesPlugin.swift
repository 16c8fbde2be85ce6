// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Contracts
import Crypto
import EventDelivery
import PluginKit
import Storage

/// Files the signed-in user stores (`io.appd.Files`): profile pictures, images in chat,
/// attachments. Their bytes go over HTTP (`FileTransfers` at `/files`), their descriptions are
/// rows, and an account's files are erased with it.
public struct FilesPlugin: Plugin {
    public let manifest = PluginManifest(
        name: "files", version: "0.1.0", dependencies: ["auth"], interface: FilesInterface.idl, events: FilesEvents.all, consumes: [AccountDeleted.self],
        configKeys: [
            "filesDirectory", "filesMaxMB", "filesQuotaMB", "filesUploadsInFlight", "filesPendingUploads", "filesUploadHours", "filesAllowedTypes", "filesMaxMegapixels",
            "filesThumbnailSizes", "filesThumbnailMaxMegapixels", "filesKeepMetadata", "filesUrlKeyFile", "filesS3Endpoint", "filesS3Bucket", "filesS3Region", "filesS3AccessKeyId",
            "filesS3SecretKeyFile",
            "filesS3PathStyle", "filesS3Prefix", "filesS3PartMB", "filesS3CaFile",
        ])
    public var migrations: [Migration] { FilesMigrations.all }

    let options: FilesOptions
    let uploads = UploadsInFlight()
    let busy = BusyUploads()
    /// The signed URLs' signer, set when the plugin starts (its key may be a file it makes).
    private let signers = SignerBox()
    /// Where finished files' bytes are: the directory, or the bucket.
    let store: any FileStore

    /// Checks the options; touches no disk (an `appd restore` builds the plugins too).
    public init(options: FilesOptions) throws {
        self.options = options
        self.store = try options.s3.map { try S3FileStore($0) } ?? FileBlobs(directory: options.directory)
    }

    /// The signer of the running plugin.
    var signer: FileURLSigner {
        get throws {
            guard let signer = signers.signer else { throw FileBlobError("the files plugin has not started") }
            return signer
        }
    }

    /// Makes the directory and, unless the options carry one, the URL key kept in it.
    public func start(_ context: PluginContext) async throws {
        try FileBlobs(directory: options.directory).prepare()
        let signer = FileURLSigner(key: try options.urlKey ?? Self.keptKey(in: options.directory))
        signers.signer = signer
        let repository = FilesRepository(database: context.database)
        let quota = options.quotaBytes
        context.handlers.handle(FilesInterface.List.self) { c, e in
            let limit = c.limit ?? 50
            guard (1...200).contains(limit) else { throw FilesError.validation("limit", "is 1 to 200") }
            var after: (Int64, String)?
            if let cursor = c.cursor {
                let parts = cursor.split(separator: ".", maxSplits: 1)
                guard parts.count == 2, let created = Int64(parts[0]), FileTransfers.isFileID(String(parts[1])) else {
                    throw FilesError.validation("cursor", "is not one a List returned")
                }
                after = (created, String(parts[1]))
            }
            let page = try await repository.list(owner: try user(e), after: after, limit: limit)
            let next = page.count == limit ? page.last.map { "\($0.createdNs).\($0.file.id)" } : nil
            return .init(files: page.map(\.file), nextCursor: next)
        }
        context.handlers.handle(FilesInterface.Get.self) { c, e in
            guard let file = try await repository.file(c.id, owner: try user(e)) else { throw FilesError.notFound }
            return .init(file: file)
        }
        /// A signed path to the owner's file `id` for `seconds`, and when it expires (Unix seconds):
        /// for its owner (`SignURL`) and for a plugin handing it on (`SignFileURL`).
        @Sendable func sign(_ id: String, owner: String, seconds: Int) async throws -> (path: String, expires: Int64) {
            guard (1...86_400).contains(seconds) else { throw FilesError.validation("seconds", "is 1 to 86400") }
            guard try await repository.file(id, owner: owner) != nil else { throw FilesError.notFound }
            let expires = WallTime.now().nanosecondsSinceEpoch / 1_000_000_000 + Int64(seconds)
            return (signer.path(for: id, expires: expires), expires)
        }
        context.handlers.handle(FilesInterface.SignURL.self) { c, e in
            let signed = try await sign(c.id, owner: try user(e), seconds: c.seconds ?? 300)
            return .init(path: signed.path, expiresAt: WallTime(nanosecondsSinceEpoch: signed.expires * 1_000_000_000).rfc3339)
        }
        let store = self.store, logger = context.logger
        context.handlers.handle(FilesInterface.Delete.self) { c, e in
            let owner = try user(e)
            guard let file = try await repository.delete(c.id, owner: owner, causedBy: e) else { throw FilesError.notFound }
            // The row is gone (the file with it); bytes left behind by a failure here are only disk.
            do { try await store.remove(FilesRepository.storedNames(file)) } catch {
                logger.error("a deleted file's bytes could not be removed", metadata: ["file": "\(c.id)", "error": "\(error)"])
            }
            return Empty()
        }
        context.handlers.handleInProcess(AttachFile.self) { c, _ in
            try await repository.attach(c.id, owner: c.owner, item: c.item, images: c.images)
        }
        context.handlers.handleInProcess(ReleaseFiles.self) { c, e in
            let released = try await repository.release(owner: c.owner, item: c.item, keeping: c.keeping, causedBy: e)
            do { try await store.remove(released.flatMap(FilesRepository.storedNames)) } catch {
                logger.error("a released file's bytes could not be removed", metadata: ["item": "\(c.item)", "error": "\(error)"])
            }
            return .init(deleted: released.count)
        }
        context.handlers.handleInProcess(ReadFile.self) { c, _ in
            guard let file = try await repository.file(c.id, owner: c.owner) else { throw FilesError.notFound }
            let side = c.thumbnail.flatMap { file.thumbnails.contains($0) ? $0 : nil }
            if side == nil, file.bytes > Int64(c.maxBytes) { throw FilesError.tooLarge(limitBytes: Int64(c.maxBytes)) }
            guard let bytes = try await store.read(id: side.map { FilesRepository.thumbnailName(file.id, $0) } ?? file.id) else {
                throw FileBlobError("the bytes of \(file.id) are missing from the store")
            }
            guard bytes.count <= c.maxBytes else { throw FilesError.tooLarge(limitBytes: Int64(c.maxBytes)) }
            return .init(file: file, contentType: side == nil ? file.contentType : "image/jpeg", bytes: bytes)
        }
        context.handlers.handleInProcess(SignFileURL.self) { c, _ in .init(path: try await sign(c.id, owner: c.owner, seconds: c.seconds).path) }
        context.handlers.handle(FilesInterface.Usage.self) { _, e in
            let (files, bytes) = try await repository.usage(owner: try user(e))
            return .init(files: files, bytes: bytes, quotaBytes: quota)
        }
        if let transfers = transfers(context) {
            registerPieces(ResumableUploads(transfers: transfers, uploads: UploadsRepository(database: context.database), busy: busy), on: context.handlers)
        }
    }

    public func services(_ context: PluginContext) -> [any Service] {
        let repository = FilesRepository(database: context.database), blobs = FileBlobs(directory: options.directory), store = self.store
        let resumable = UploadsRepository(database: context.database)
        let sweeper = UploadSweeper(uploads: resumable, blobs: blobs, logger: context.logger)
        let orphans = BlobSweeper(database: context.database, blobs: blobs, logger: context.logger)
        do {
            return [
                try DurableConsumer(name: "files.accountDeleted", consuming: AccountDeleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    deleted, _ in
                    let ids = try await repository.erase(owner: deleted.userId)
                    try await store.remove(ids)
                    try await blobs.removePartials(try await resumable.erase(owner: deleted.userId))
                },
                sweeper, orphans,
            ]
        } catch {
            return [FailedService(name: "files.accountDeleted", error: error), sweeper, orphans]
        }
    }

    public func httpRoutes(_ context: PluginContext) -> [PluginHTTPRoute] {
        guard let transfers = transfers(context) else { return [] }
        return [
            PluginHTTPRoute(
                .prefix("/files"), maxBodyBytes: Int(clamping: options.maxFileBytes), openAPI: FilesOpenAPI.paths(allowedTypes: options.allowedTypes),
                crossOrigin: FilesOpenAPI.crossOrigin
            ) { request, body in await transfers.handle(request, body) }
        ]
    }

    /// The bytes' way in and out, once the plugin has started (its signer is made then).
    func transfers(_ context: PluginContext) -> FileTransfers? {
        guard let signer = try? signer else { return nil }
        return FileTransfers(
            repository: FilesRepository(database: context.database), store: store, blobs: FileBlobs(directory: options.directory), signer: signer, options: options,
            bus: context.bus, uploads: uploads, resumable: UploadsRepository(database: context.database), busy: busy)
    }

    /// What the account stored: each file's description (its bytes are at `GET /files/<id>`).
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? {
        try await UserDataQuery.run(
            [
                UserDataQuery(
                    "files", "SELECT id, name, content_type, bytes, sha256, width, height, used_by, created_ns FROM files WHERE owner = ? ORDER BY created_ns",
                    times: ["created_ns"])
            ],
            user: user, in: context.database)
    }

    /// The URL key kept in the files directory: made once (32 random bytes, 0600), read after.
    static func keptKey(in directory: String) throws -> [UInt8] {
        let path = directory + "/.url-key"
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd >= 0 {
            defer { close(fd) }
            var key = [UInt8](repeating: 0, count: 64)
            let n = key.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n >= 32 else { throw FileBlobError("\(path) holds \(max(n, 0)) bytes, not a key of 32; remove it to make a new one (signed URLs made before stop working)") }
            return Array(key.prefix(n))
        }
        let key = try Digest.randomBytes(32)
        let out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard out >= 0 else { throw FileBlobError("cannot create \(path): \(FileBlobs.errorText())") }
        defer { close(out) }
        guard key.withUnsafeBytes({ write(out, $0.baseAddress, $0.count) }) == key.count, fsync(out) == 0 else {
            throw FileBlobError("cannot write \(path): \(FileBlobs.errorText())")
        }
        return key
    }
}

func user(_ envelope: Envelope) throws(FilesError) -> String {
    try envelope.signedInUser(or: FilesError.validationFailed(field: "session", reason: "sign in first"))
}
