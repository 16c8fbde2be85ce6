// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The events the files plugin publishes.
public enum FilesEvents {
    public static let all: [any Event.Type] = [FileUploaded.self, FileDeleted.self]
}

/// A file was stored for the user.
public struct FileUploaded: OwnedEvent, Equatable {
    public static let topic = "files.uploaded"
    public var userId: String
    public var fileId: String
    public var contentType: String
    public var bytes: Int64
    public init(userId: String, fileId: String, contentType: String, bytes: Int64) {
        self.userId = userId
        self.fileId = fileId
        self.contentType = contentType
        self.bytes = bytes
    }
}

/// The user deleted a file (not sent for the files erased with an account).
public struct FileDeleted: OwnedEvent, Equatable {
    public static let topic = "files.deleted"
    public var userId: String
    public var fileId: String
    public init(userId: String, fileId: String) {
        self.userId = userId
        self.fileId = fileId
    }
}
