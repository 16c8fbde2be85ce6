// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Files`: what the signed-in user stored (profile pictures, images in chat
/// messages, attachments). The bytes go over HTTP (`POST /files`, `GET /files/<id>`, see
/// docs/files.md); these methods list, describe, sign and delete them.
public enum FilesInterface {
    public static let idl = """
        # Files the signed-in user stored: profile pictures, images in chat messages, attachments.
        # The bytes go over HTTP: POST /files (the body is the file; Content-Type and ?name= say
        # what it is) and GET /files/<id> (with the bearer token, or a URL from SignURL). Every
        # method needs a signed-in user, who sees only their own files.
        interface io.appd.Files

        # sha256: the stored bytes' digest, hex (after metadata was stripped). width, height: an
        # image's pixels. thumbnails: the sides of the JPEG thumbnails made of it (GET
        # /files/<id>?thumbnail=<side>). usedBy: the item it goes with (auth.avatar, a chat
        # conversation, a todo), deleted with it; none for a file of its own.
        type File (
          id: string,
          name: string,
          contentType: string,
          bytes: int,
          sha256: string,
          width: ?int,
          height: ?int,
          thumbnails: []int,
          usedBy: ?string,
          createdAt: string
        )

        # Newest first; nextCursor continues the list.
        method List(cursor: ?string, limit: ?int) -> (files: []File, nextCursor: ?string)

        method Get(id: string) -> (file: File)

        # A path (with ?expires= and ?sig=) that GETs this file without an Authorization header
        # until expiresAt: for AsyncImage and other loaders that cannot set one. seconds: 1 to
        # 86400, 300 when omitted.
        method SignURL(id: string, seconds: ?int) -> (path: string, expiresAt: string)

        # A file an item uses (usedBy) is InUse: it goes with the item.
        method Delete(id: string) -> ()

        # What the account stores, and how much it may.
        method Usage() -> (files: int, bytes: int, quotaBytes: int)

        # Resumable uploads over the bus (appctl files put; apps use POST /files or tus at
        # /files/uploads, the same uploads): CreateUpload with the file's size in bytes, then
        # AppendUpload the pieces in order, each at the offset reached, data the piece in base64
        # (at most 524288 bytes decoded). After a failure UploadStatus says where to go on. The
        # last piece makes the file, checked as POST /files checks it. An upload not finished
        # within filesUploadHours is deleted.
        method CreateUpload(bytes: int, name: ?string, contentType: ?string) -> (uploadId: string, expiresAt: string)

        method UploadStatus(uploadId: string) -> (offset: int, bytes: int, file: ?File)

        method AppendUpload(uploadId: string, offset: int, data: string) -> (offset: int, file: ?File)

        # A piece of a file's bytes over the bus (appctl files get; apps use GET /files/<id>):
        # from offset (0 when omitted), at most limit bytes (1 to 524288, the most when
        # omitted), in base64. total: the file's size; the piece ends it when offset plus its
        # length reaches total.
        method Download(id: string, offset: ?int, limit: ?int) -> (data: string, offset: int, total: int)

        # category: invalid
        error ValidationFailed (field: string, reason: string)
        # category: notFound
        error NotFound ()
        # The account stores as many bytes as it may: delete files first.
        # category: forbidden
        error QuotaExceeded (quotaBytes: int)
        # The file is larger than one upload may be.
        # category: invalid
        error TooLarge (limitBytes: int)
        # The bytes are not of a type the operator allows, or not of the type declared.
        # category: invalid
        error TypeRefused (declared: string, detected: ?string, reason: string)
        # The file goes with an item (an avatar, a conversation, a todo): change or delete that.
        # category: conflict
        error InUse (usedBy: string)
        # The piece does not start where the upload is, or another piece is being written to it
        # right now: go on from offset.
        # category: conflict
        error OffsetMismatch (offset: int)

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [
        List.self, Get.self, SignURL.self, Delete.self, Usage.self, CreateUpload.self, UploadStatus.self, AppendUpload.self, Download.self,
    ]

    /// The most bytes one `AppendUpload` piece or `Download` reply carries (decoded): its
    /// base64 and the envelope fit in the socket's default message of 1 MiB.
    public static let pieceBytes = 524_288
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = FilesError
    public static var name: String { Errors.interface }

    public struct List: Command {
        public static let method = "io.appd.Files.List"
        public static let readsOnly = true
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var files: [StoredFile]
            public var nextCursor: String?
            public init(files: [StoredFile], nextCursor: String? = nil) {
                self.files = files
                self.nextCursor = nextCursor
            }
        }
        public var cursor: String?
        public var limit: Int?
        public init(cursor: String? = nil, limit: Int? = nil) {
            self.cursor = cursor
            self.limit = limit
        }
    }
    public struct Get: Command {
        public static let method = "io.appd.Files.Get"
        public static let readsOnly = true
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var file: StoredFile
            public init(file: StoredFile) { self.file = file }
        }
        public var id: String
        public init(id: String) { self.id = id }
    }
    public struct SignURL: Command {
        public static let method = "io.appd.Files.SignURL"
        public static let readsOnly = true
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var path: String
            public var expiresAt: String
            public init(path: String, expiresAt: String) {
                self.path = path
                self.expiresAt = expiresAt
            }
        }
        public var id: String
        public var seconds: Int?
        public init(id: String, seconds: Int? = nil) {
            self.id = id
            self.seconds = seconds
        }
    }
    public struct Delete: Command {
        public static let method = "io.appd.Files.Delete"
        public static var requirements: [Requirement] { [.session, .idempotent] }
        public typealias Reply = Empty
        public var id: String
        public init(id: String) { self.id = id }
    }
    public struct Usage: Command {
        public static let method = "io.appd.Files.Usage"
        public static let readsOnly = true
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var files: Int
            public var bytes: Int64
            public var quotaBytes: Int64
            public init(files: Int, bytes: Int64, quotaBytes: Int64) {
                self.files = files
                self.bytes = bytes
                self.quotaBytes = quotaBytes
            }
        }
        public init() {}
    }
}

extension FilesInterface {
    public struct CreateUpload: Command {
        public static let method = "io.appd.Files.CreateUpload"
        public static var requirements: [Requirement] { [.session, .idempotent] }
        public struct Reply: Codable, Sendable, Equatable {
            public var uploadId: String
            public var expiresAt: String
            public init(uploadId: String, expiresAt: String) {
                self.uploadId = uploadId
                self.expiresAt = expiresAt
            }
        }
        public var bytes: Int64
        public var name: String?
        public var contentType: String?
        public init(bytes: Int64, name: String? = nil, contentType: String? = nil) {
            self.bytes = bytes
            self.name = name
            self.contentType = contentType
        }
    }
    public struct UploadStatus: Command {
        public static let method = "io.appd.Files.UploadStatus"
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var offset: Int64
            public var bytes: Int64
            public var file: StoredFile?
            public init(offset: Int64, bytes: Int64, file: StoredFile? = nil) {
                self.offset = offset
                self.bytes = bytes
                self.file = file
            }
        }
        public var uploadId: String
        public init(uploadId: String) { self.uploadId = uploadId }
    }
    public struct AppendUpload: Command {
        public static let method = "io.appd.Files.AppendUpload"
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var offset: Int64
            public var file: StoredFile?
            public init(offset: Int64, file: StoredFile? = nil) {
                self.offset = offset
                self.file = file
            }
        }
        public var uploadId: String
        public var offset: Int64
        /// The piece, base64.
        public var data: String
        public init(uploadId: String, offset: Int64, data: String) {
            self.uploadId = uploadId
            self.offset = offset
            self.data = data
        }
    }
    public struct Download: Command {
        public static let method = "io.appd.Files.Download"
        public static let readsOnly = true
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            /// The piece, base64.
            public var data: String
            public var offset: Int64
            public var total: Int64
            public init(data: String, offset: Int64, total: Int64) {
                self.data = data
                self.offset = offset
                self.total = total
            }
        }
        public var id: String
        public var offset: Int64?
        public var limit: Int?
        public init(id: String, offset: Int64? = nil, limit: Int? = nil) {
            self.id = id
            self.offset = offset
            self.limit = limit
        }
    }
}

/// One stored file, as `io.appd.Files` describes it (the IDL's `File`).
public struct StoredFile: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var name: String
    public var contentType: String
    public var bytes: Int64
    public var sha256: String
    public var width: Int?
    public var height: Int?
    /// The sides of the thumbnails made of it.
    public var thumbnails: [Int]
    /// The item it goes with (`AttachFile`), if any.
    public var usedBy: String?
    public var createdAt: String
    public init(
        id: String, name: String, contentType: String, bytes: Int64, sha256: String, width: Int? = nil, height: Int? = nil, thumbnails: [Int] = [],
        usedBy: String? = nil, createdAt: String
    ) {
        self.id = id
        self.name = name
        self.contentType = contentType
        self.bytes = bytes
        self.sha256 = sha256
        self.width = width
        self.height = height
        self.thumbnails = thumbnails
        self.usedBy = usedBy
        self.createdAt = createdAt
    }
}
