// SPDX-License-Identifier: Apache-2.0
import BusCore

/// Commands the files plugin serves other plugins in the process (they are in no IDL, so no
/// client can call them): a plugin that keeps a user's file with one of its items — the
/// account's avatar, a chat conversation's images, a todo's attachments — attaches it, reads
/// it, and releases the item's files when the item goes. A file belongs to at most one item
/// (`StoredFile.usedBy`); while it does, `Files.Delete` refuses it (`InUse`): it goes with its item.
public enum FileAttachments {}

/// Attaches the owner's file `id` to `item` (a name the calling plugin owns, e.g. `auth.avatar`
/// or `chat.c_…`); attaching it to the item it is attached to already is a no-op. Throws
/// `FilesError.notFound` for a file the owner does not have, `.inUse` when it is another
/// item's, `.typeRefused` when `images` and it is not an image.
public struct AttachFile: Command {
    public static let method = "io.appd.Files.Attach"
    public typealias Reply = StoredFile
    public var owner: String
    public var id: String
    public var item: String
    public var images: Bool
    public init(owner: String, id: String, item: String, images: Bool = false) {
        self.owner = owner
        self.id = id
        self.item = item
        self.images = images
    }
}

extension AttachFile {
    /// Why `file` could not be attached, in words for the field of the caller's method that
    /// named it (`fileId`, `images`): nil when `error` is not a refusal of the file.
    public static func refusal(of file: String, _ error: any Error) -> String? {
        switch error {
        case FilesError.notFound: "\(file) is not a file of yours; upload it first (POST /files)"
        case FilesError.inUse(let item): "\(file) goes with \(item) already; upload it again"
        case let refused as FilesError: "\(file): \(refused.description)"
        case is NoHandler: "this server keeps no files (the files plugin is not loaded)"
        default: nil
        }
    }
}

/// The item is gone (or holds other files now): deletes the owner's files attached to it but
/// those in `keeping`, rows and bytes, each with `files.deleted`.
public struct ReleaseFiles: Command {
    public static let method = "io.appd.Files.Release"
    public struct Reply: Codable, Sendable, Equatable {
        public var deleted: Int
        public init(deleted: Int) { self.deleted = deleted }
    }
    public var owner: String
    public var item: String
    public var keeping: [String]
    public init(owner: String, item: String, keeping: [String] = []) {
        self.owner = owner
        self.item = item
        self.keeping = keeping
    }
}

/// The bytes of the owner's file `id` for a plugin that passes them on (chat, to a model):
/// its thumbnail of `side` when it has one, else the file itself. Throws `FilesError.tooLarge`
/// when what would be read is over `maxBytes`.
public struct ReadFile: Command {
    public static let method = "io.appd.Files.Read"
    public static let readsOnly = true
    public struct Reply: Codable, Sendable, Equatable {
        public var file: StoredFile
        /// The type of `bytes`: the file's, or `image/jpeg` for a thumbnail.
        public var contentType: String
        public var bytes: [UInt8]
        public init(file: StoredFile, contentType: String, bytes: [UInt8]) {
            self.file = file
            self.contentType = contentType
            self.bytes = bytes
        }
    }
    public var owner: String
    public var id: String
    public var thumbnail: Int?
    public var maxBytes: Int
    public init(owner: String, id: String, thumbnail: Int? = nil, maxBytes: Int) {
        self.owner = owner
        self.id = id
        self.thumbnail = thumbnail
        self.maxBytes = maxBytes
    }
}

/// A signed path to the owner's file `id` (as `Files.SignURL` gives its owner), for a plugin
/// that hands the file to a third party which fetches it itself (chat's model, with
/// `chatImageBaseURL`): `path` with `?expires=` and `?sig=`, valid for `seconds`.
public struct SignFileURL: Command {
    public static let method = "io.appd.Files.SignFileURL"
    public static let readsOnly = true
    public struct Reply: Codable, Sendable, Equatable {
        public var path: String
        public init(path: String) { self.path = path }
    }
    public var owner: String
    public var id: String
    public var seconds: Int
    public init(owner: String, id: String, seconds: Int) {
        self.owner = owner
        self.id = id
        self.seconds = seconds
    }
}
