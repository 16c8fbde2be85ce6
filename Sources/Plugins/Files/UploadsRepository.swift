// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// One resumable upload as `files_uploads` keeps it.
struct PendingUpload: Sendable, Equatable {
    var id: String
    var owner: String
    var length: Int64
    var received: Int64
    var name: String?
    var contentType: String?
    var expiresNs: Int64
    /// The file it became, once complete and stored.
    var fileID: String?
}

/// The `files_uploads` table: resumable uploads, how much of each arrived, what each became.
struct UploadsRepository: Sendable {
    let database: any Database

    /// Records a new upload if the account has room for it: its stored files, the uploads it
    /// has under way and this one within the quota, and fewer than `pending` under way.
    func create(_ upload: PendingUpload, createdNs: Int64, quota: Int64, pending: Int) async throws {
        try await database.write { tx in
            let owner: [SQLValue] = [.text(upload.owner)]
            let stored = try tx.query("SELECT COALESCE(SUM(bytes), 0) AS n FROM files WHERE owner = ?", owner).first?.integer("n") ?? 0
            let open = try tx.query(
                "SELECT COUNT(*) AS n, COALESCE(SUM(length), 0) AS bytes FROM files_uploads WHERE owner = ? AND file_id IS NULL", owner
            ).first
            guard (open?.integer("n") ?? 0) < Int64(pending) else {
                throw FilesError.validation("upload", "this account has \(pending) uploads under way, as many as it may; finish or delete one first")
            }
            guard stored + (open?.integer("bytes") ?? 0) + upload.length <= quota else { throw FilesError.quotaExceeded(quotaBytes: quota) }
            try tx.execute(
                "INSERT INTO files_uploads (id, owner, length, received, name, content_type, created_ns, expires_ns) VALUES (?, ?, ?, 0, ?, ?, ?, ?)",
                [
                    .text(upload.id), .text(upload.owner), .integer(upload.length), upload.name.map { .text($0) } ?? .null,
                    upload.contentType.map { .text($0) } ?? .null, .integer(createdNs), .integer(upload.expiresNs),
                ])
        }
    }

    /// The owner's upload `id` (nil: none, another user's, or expired by `now`).
    func upload(_ id: String, owner: String, now: Int64) async throws -> PendingUpload? {
        try await database.read { tx in
            try tx.query("SELECT * FROM files_uploads WHERE id = ? AND owner = ? AND expires_ns > ?", [.text(id), .text(owner), .integer(now)]).first.map(Self.upload)
        }
    }

    /// Moves the upload from `from` to `to` bytes received; false when it was not at `from`.
    func advance(_ id: String, from: Int64, to: Int64) async throws -> Bool {
        try await database.write { tx in
            try tx.execute("UPDATE files_uploads SET received = ? WHERE id = ? AND received = ? AND file_id IS NULL", [.integer(to), .text(id), .integer(from)]) == 1
        }
    }

    func completed(_ id: String, file: String) async throws {
        _ = try await database.write { tx in try tx.execute("UPDATE files_uploads SET file_id = ? WHERE id = ?", [.text(file), .text(id)]) }
    }

    func delete(_ id: String) async throws {
        _ = try await database.write { tx in try tx.execute("DELETE FROM files_uploads WHERE id = ?", [.text(id)]) }
    }

    /// Forgets the uploads that expired by `now` (at most `limit`); returns their ids.
    func expire(now: Int64, limit: Int = 500) async throws -> [String] {
        try await database.write { tx in
            let ids = try tx.query("SELECT id FROM files_uploads WHERE expires_ns <= ? LIMIT ?", [.integer(now), .integer(Int64(limit))]).compactMap { $0.text("id") }
            for id in ids { try tx.execute("DELETE FROM files_uploads WHERE id = ?", [.text(id)]) }
            return ids
        }
    }

    /// Forgets an erased account's uploads; returns their ids.
    func erase(owner: String) async throws -> [String] {
        try await database.write { tx in
            let ids = try tx.query("SELECT id FROM files_uploads WHERE owner = ?", [.text(owner)]).compactMap { $0.text("id") }
            try tx.execute("DELETE FROM files_uploads WHERE owner = ?", [.text(owner)])
            return ids
        }
    }

    static func upload(_ row: Row) throws -> PendingUpload {
        guard let id = row.text("id"), let owner = row.text("owner"), let length = row.integer("length"), let received = row.integer("received"),
            let expires = row.integer("expires_ns")
        else { throw StorageError(kind: .corrupt, message: "a files_uploads row is incomplete") }
        return PendingUpload(
            id: id, owner: owner, length: length, received: received, name: row.text("name"), contentType: row.text("content_type"), expiresNs: expires,
            fileID: row.text("file_id"))
    }
}
