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

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [List.self, Get.self, SignURL.self, Delete.self, Usage.self]
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
