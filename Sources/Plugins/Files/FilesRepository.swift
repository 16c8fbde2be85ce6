// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// The `files` table: each file's description and owner, the account's total, and the events
/// a change logs in the same transaction.
struct FilesRepository: Sendable {
    let database: any Database

    static let columns = "id, name, content_type, bytes, sha256, width, height, thumbnails, used_by, created_ns"

    /// Records a file written to the blobs, if the account has room for it. A second upload
    /// with the same idempotency key returns the first one's file (and `created` false: its
    /// bytes are not kept).
    func insert(_ file: StoredFile, owner: String, createdNs: Int64, idempotencyKey: String?, quota: Int64) async throws -> (file: StoredFile, created: Bool) {
        try await database.write { tx in
            if let idempotencyKey,
                let row = try tx.query("SELECT \(Self.columns) FROM files WHERE owner = ? AND idempotency_key = ?", [.text(owner), .text(idempotencyKey)]).first
            {
                return (try Self.file(row), false)
            }
            let used = try tx.query("SELECT COALESCE(SUM(bytes), 0) AS used FROM files WHERE owner = ?", [.text(owner)]).first?.integer("used") ?? 0
            guard used + file.bytes <= quota else { throw FilesError.quotaExceeded(quotaBytes: quota) }
            try tx.execute(
                "INSERT INTO files (id, owner, name, content_type, bytes, sha256, width, height, thumbnails, created_ns, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(file.id), .text(owner), .text(file.name), .text(file.contentType), .integer(file.bytes), .text(file.sha256),
                    file.width.map { .integer(Int64($0)) } ?? .null, file.height.map { .integer(Int64($0)) } ?? .null,
                    .text(file.thumbnails.map(String.init).joined(separator: ",")), .integer(createdNs),
                    idempotencyKey.map { .text($0) } ?? .null,
                ])
            try tx.append(FileUploaded(userId: owner, fileId: file.id, contentType: file.contentType, bytes: file.bytes), causedBy: nil)
            return (file, true)
        }
    }

    /// The owner's file `id`; nil when there is none (another user's is none too).
    func file(_ id: String, owner: String) async throws -> StoredFile? {
        try await database.read { tx in
            try tx.query("SELECT \(Self.columns) FROM files WHERE id = ? AND owner = ?", [.text(id), .text(owner)]).first.map(Self.file)
        }
    }

    /// The owner's file stored by the upload with `idempotencyKey`, if any.
    func file(owner: String, idempotencyKey key: String) async throws -> StoredFile? {
        try await database.read { tx in
            try tx.query("SELECT \(Self.columns) FROM files WHERE owner = ? AND idempotency_key = ?", [.text(owner), .text(key)]).first.map(Self.file)
        }
    }

    /// File `id` whoever owns it: for a signed URL, which names the file it opens.
    func file(_ id: String) async throws -> StoredFile? {
        try await database.read { tx in try tx.query("SELECT \(Self.columns) FROM files WHERE id = ?", [.text(id)]).first.map(Self.file) }
    }

    /// Newest first, after `cursor` (`<created_ns>.<id>` of the last one seen).
    func list(owner: String, after cursor: (Int64, String)?, limit: Int) async throws -> [(file: StoredFile, createdNs: Int64)] {
        try await database.read { tx in
            let rows: [Row]
            if let (created, id) = cursor {
                rows = try tx.query(
                    "SELECT \(Self.columns) FROM files WHERE owner = ? AND (created_ns < ? OR (created_ns = ? AND id < ?)) ORDER BY created_ns DESC, id DESC LIMIT ?",
                    [.text(owner), .integer(created), .integer(created), .text(id), .integer(Int64(limit))])
            } else {
                rows = try tx.query("SELECT \(Self.columns) FROM files WHERE owner = ? ORDER BY created_ns DESC, id DESC LIMIT ?", [.text(owner), .integer(Int64(limit))])
            }
            return try rows.map { (try Self.file($0), $0.integer("created_ns") ?? 0) }
        }
    }

    func usage(owner: String) async throws -> (files: Int, bytes: Int64) {
        try await database.read { tx in
            let row = try tx.query("SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS used FROM files WHERE owner = ?", [.text(owner)]).first
            return (Int(row?.integer("n") ?? 0), row?.integer("used") ?? 0)
        }
    }

    /// Forgets the owner's file `id` and returns it; nil when there was none. One an item uses
    /// is refused (`inUse`): it goes with the item.
    func delete(_ id: String, owner: String, causedBy cause: (any Cause)?) async throws -> StoredFile? {
        try await database.write { tx in
            guard let file = try tx.query("SELECT \(Self.columns) FROM files WHERE id = ? AND owner = ?", [.text(id), .text(owner)]).first.map(Self.file) else {
                return nil
            }
            if let item = file.usedBy { throw FilesError.inUse(usedBy: item) }
            try tx.execute("DELETE FROM files WHERE id = ? AND owner = ?", [.text(id), .text(owner)])
            try tx.append(FileDeleted(userId: owner, fileId: id), causedBy: cause)
            return file
        }
    }

    /// Attaches the owner's file `id` to `item` (see `AttachFile`).
    func attach(_ id: String, owner: String, item: String, images: Bool) async throws -> StoredFile {
        try await database.write { tx in
            guard var file = try tx.query("SELECT \(Self.columns) FROM files WHERE id = ? AND owner = ?", [.text(id), .text(owner)]).first.map(Self.file) else {
                throw FilesError.notFound
            }
            if let used = file.usedBy, used != item { throw FilesError.inUse(usedBy: used) }
            if images, !file.contentType.hasPrefix("image/") {
                throw FilesError.typeRefused(declared: file.contentType, detected: file.contentType, reason: "only an image can go here; this file is \(file.contentType)")
            }
            if file.usedBy == nil {
                try tx.execute("UPDATE files SET used_by = ? WHERE id = ?", [.text(item), .text(id)])
                file.usedBy = item
            }
            return file
        }
    }

    /// Forgets the owner's files attached to `item` but `keeping`, and returns them (their
    /// bytes are the caller's to remove).
    func release(owner: String, item: String, keeping: [String], causedBy cause: (any Cause)?) async throws -> [StoredFile] {
        try await database.write { tx in
            let files = try tx.query("SELECT \(Self.columns) FROM files WHERE owner = ? AND used_by = ?", [.text(owner), .text(item)]).map(Self.file)
                .filter { !keeping.contains($0.id) }
            for file in files {
                try tx.execute("DELETE FROM files WHERE id = ?", [.text(file.id)])
                try tx.append(FileDeleted(userId: owner, fileId: file.id), causedBy: cause)
            }
            return files
        }
    }

    /// Forgets every file of an erased account; returns the names of their bytes in the store
    /// (each file and its thumbnails).
    func erase(owner: String) async throws -> [String] {
        try await database.write { tx in
            let rows = try tx.query("SELECT \(Self.columns) FROM files WHERE owner = ?", [.text(owner)])
            try tx.execute("DELETE FROM files WHERE owner = ?", [.text(owner)])
            return try rows.flatMap { Self.storedNames(try Self.file($0)) }
        }
    }

    /// The names of a file's bytes in the store: its own and its thumbnails'.
    static func storedNames(_ file: StoredFile) -> [String] { [file.id] + file.thumbnails.map { thumbnailName(file.id, $0) } }

    static func thumbnailName(_ id: String, _ side: Int) -> String { "\(id).t\(side)" }

    static func file(_ row: Row) throws -> StoredFile {
        guard let id = row.text("id"), let name = row.text("name"), let type = row.text("content_type"), let bytes = row.integer("bytes"),
            let sha = row.text("sha256"), let created = row.integer("created_ns")
        else { throw StorageError(kind: .corrupt, message: "a files row is incomplete") }
        return StoredFile(
            id: id, name: name, contentType: type, bytes: bytes, sha256: sha, width: row.integer("width").map(Int.init), height: row.integer("height").map(Int.init),
            thumbnails: (row.text("thumbnails") ?? "").split(separator: ",").compactMap { Int($0) }, usedBy: row.text("used_by"),
            createdAt: WallTime(nanosecondsSinceEpoch: created).rfc3339)
    }
}
